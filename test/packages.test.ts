// The workspace packages depend one way: the deployables (relay, control, builders) and
// the users' packages (client, wasmkube, console) import only the shared packages they list
// (common, auth, spin, login), never each other, and no relative import leaves a package.
// This reads every import of every package's sources and fails on one that breaks that.
import { readdirSync, readFileSync } from 'node:fs'
import { join, posix, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const repo = fileURLToPath(new URL('../', import.meta.url))

// What each package may import by name, besides itself.
const ALLOWED: Record<string, readonly string[]> = {
  common: [],
  auth: ['common'],
  spin: ['common'],
  relay: ['common', 'auth'],
  control: ['common', 'auth', 'spin'],
  builders: ['common', 'spin'],
  login: [],
  client: ['login'],
  wasmkube: ['login'],
  console: [],
}

const SPECIFIER = /(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+|^export\s+\*\s+from\s+)['"]([^'"]+)['"]/gm

/** Why `spec`, imported by `file` (relative to its package's src/), breaks the rule, or null. */
export function violation(pkg: string, file: string, spec: string): string | null {
  const named = /^@session-relay\/([^/]+)/.exec(spec)
  if (named !== null) {
    const target = named[1] as string
    if (target === pkg) return `${pkg}/src/${file} imports its own package by name (${spec}): relative within a package`
    return (ALLOWED[pkg] ?? []).includes(target)
      ? null
      : `${pkg}/src/${file} imports ${spec}: ${target} is not a package ${pkg} may use`
  }
  if (!spec.startsWith('.')) return null
  const resolved = posix.normalize(posix.join(posix.dirname(file), spec))
  return resolved.startsWith('../') ? `${pkg}/src/${file} reaches out of its package (${spec})` : null
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name === 'dist') return []
    const path = join(dir, entry.name)
    return entry.isDirectory()
      ? sources(path)
      : /\.(ts|tsx)$/.test(entry.name) && !entry.name.endsWith('.d.ts')
        ? [path]
        : []
  })
}

/** Every import specifier in the sources under `dir` (from the repository), each file relative to it. */
function importsUnder(dir: string): Array<{ file: string; spec: string }> {
  const src = join(repo, dir)
  return sources(src).flatMap((path) => {
    const file = relative(src, path).split('\\').join('/')
    return [...readFileSync(path, 'utf8').matchAll(SPECIFIER)].map((match) => ({ file, spec: match[1] as string }))
  })
}

const IMPORTS = new Map(Object.keys(ALLOWED).map((pkg) => [pkg, importsUnder(`${pkg}/src`)]))

t.test('the check catches a deployable importing another and a relative import out of a package', async (t) => {
  t.equal(
    violation('builders', 'build-app.ts', '@session-relay/control/source/archive'),
    'builders/src/build-app.ts imports @session-relay/control/source/archive: control is not a package builders may use',
  )
  t.equal(
    violation('common', 'errors.ts', '@session-relay/spin/ref'),
    'common/src/errors.ts imports @session-relay/spin/ref: spin is not a package common may use',
  )
  t.equal(
    violation('relay', 'auth.ts', '../../common/src/errors.js'),
    'relay/src/auth.ts reaches out of its package (../../common/src/errors.js)',
  )
  t.equal(violation('control', 'domain/builds.ts', '../store/builds.js'), null)
  t.equal(violation('control', 'config.ts', '@session-relay/spin/languages'), null)
  t.equal(
    violation('spin', 'ref.ts', '@session-relay/spin/format'),
    'spin/src/ref.ts imports its own package by name (@session-relay/spin/format): relative within a package',
  )
})

t.test('every package imports only what it may', async (t) => {
  const found: string[] = []
  for (const [pkg, imports] of IMPORTS) {
    t.ok(imports.length > 0, `${pkg}/src has imports`)
    for (const { file, spec } of imports) {
      const why = violation(pkg, file, spec)
      if (why !== null) found.push(why)
    }
  }
  t.same(found, [], 'no import across deployables')
})

t.test('each package declares the shared packages it imports', async (t) => {
  for (const pkg of Object.keys(ALLOWED)) {
    const manifest = JSON.parse(readFileSync(join(repo, pkg, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>
    }
    const declared = Object.keys(manifest.dependencies ?? {})
      .filter((name) => name.startsWith('@session-relay/'))
      .map((name) => name.slice('@session-relay/'.length))
    const used = new Set(
      (IMPORTS.get(pkg) ?? []).flatMap(({ spec }) => /^@session-relay\/([^/]+)/.exec(spec)?.slice(1, 2) ?? []),
    )
    t.same(declared.sort(), [...used].sort(), `${pkg}/package.json lists what ${pkg} imports`)
  }
})

/** A circle in `graph` (file to the files it imports), as the files round it, or null. */
export function circle(graph: ReadonlyMap<string, readonly string[]>): string[] | null {
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (file: string): string[] | null => {
    if (state.get(file) === 'done') return null
    if (state.get(file) === 'open') return [...path.slice(path.indexOf(file)), file]
    state.set(file, 'open')
    path.push(file)
    for (const next of graph.get(file) ?? []) {
      const found = visit(next)
      if (found !== null) return found
    }
    path.pop()
    state.set(file, 'done')
    return null
  }
  for (const file of graph.keys()) {
    const found = visit(file)
    if (found !== null) return found
  }
  return null
}

/**
 * The files under `dir` (from the repository) and which of them each one imports (type-only
 * imports too: a circle of types is still one); imports that leave `dir` are left out.
 */
function graphOf(dir: string, imports = importsUnder(dir)): Map<string, string[]> {
  const files = new Set(sources(join(repo, dir)).map((path) => relative(join(repo, dir), path).split('\\').join('/')))
  const graph = new Map<string, string[]>([...files].map((file) => [file, []]))
  for (const { file, spec } of imports) {
    if (!spec.startsWith('.')) continue
    const base = posix.normalize(posix.join(posix.dirname(file), spec)).replace(/\.js$/, '')
    const target = [`${base}.ts`, `${base}.tsx`, `${base}/index.ts`].find((candidate) => files.has(candidate))
    if (target !== undefined) graph.get(file)?.push(target)
  }
  return graph
}

t.test('the circle finder finds one and only one', async (t) => {
  t.same(
    circle(
      new Map([
        ['a', ['b']],
        ['b', ['c']],
        ['c', ['b']],
      ]),
    ),
    ['b', 'c', 'b'],
  )
  t.equal(
    circle(
      new Map([
        ['a', ['b', 'c']],
        ['b', ['c']],
        ['c', []],
      ]),
    ),
    null,
  )
})

t.test('no import circle within a package', async (t) => {
  for (const pkg of Object.keys(ALLOWED))
    t.same(circle(graphOf(`${pkg}/src`, IMPORTS.get(pkg))), null, `${pkg}: no circle`)
})

t.test('no import circle in the scripts, the tests or the benchmarks', async (t) => {
  for (const dir of ['scripts', 'test', 'bench']) t.same(circle(graphOf(dir)), null, `${dir}: no circle`)
})
