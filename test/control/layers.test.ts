// The control plane's folders depend one way (control/src/README.md): http -> domain ->
// runtime (implemented by cluster and local) -> store / metrics -> model, with
// config and logger below them all and server.ts, the composition root, above. A section's
// settings table (`settings.ts` or `*-settings.ts` beside its consumers, composed by config.ts)
// is in config.ts's layer wherever it sits: beneath every folder, reading only model/. This reads
// every import in control/src and fails on one that points the other way, or from one route
// module into another.
import { readdirSync, readFileSync } from 'node:fs'
import { join, posix, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const srcDir = fileURLToPath(new URL('../../control/src/', import.meta.url))

// What each layer may import from control/src, besides its own folder.
const ALLOWED: Record<string, readonly string[]> = {
  // The tracing SDK starts before server.ts is imported (tracing/sdk.ts).
  'main.ts': ['server.ts', 'config.ts', 'logger.ts', 'tracing'],
  'server.ts': [
    'http',
    'domain',
    'runtime',
    'store',
    'cluster',
    'local',
    'registry',
    'metrics',
    'tracing',
    'model',
    'config.ts',
    'logger.ts',
  ],
  // The kept traces (tracing/store.ts) are served by their routes.
  http: ['domain', 'runtime', 'store', 'registry', 'metrics', 'tracing', 'model', 'config.ts', 'logger.ts'],
  // The domain knows the runtime interface only, never which implementation runs.
  domain: ['runtime', 'store', 'registry', 'metrics', 'tracing', 'model', 'config.ts', 'logger.ts'],
  // The two implementations of the runtime interface stand side by side: neither knows the other.
  cluster: ['runtime', 'store', 'registry', 'model', 'config.ts', 'logger.ts'],
  // The local runtime samples its worker into the embedded metric series (metrics/embedded.ts).
  local: ['runtime', 'store', 'metrics', 'tracing', 'model', 'config.ts', 'logger.ts'],
  // The interface, the none runtime and what both implementations share (outcomes, sending an invoke).
  runtime: ['store', 'model', 'config.ts', 'logger.ts'],
  // The lower layers may use each other (the build watcher records outcomes), never a layer above.
  store: ['model', 'config.ts', 'logger.ts'],
  // Registry credentials and tokens: what they grant, signed; no state of their own.
  registry: ['config.ts'],
  metrics: ['model', 'config.ts', 'logger.ts'],
  // Spans through the OpenTelemetry API and the SDK's start: nothing of the platform's below it.
  tracing: [],
  model: [],
  'config.ts': ['model'],
  'logger.ts': [],
  'healthcheck.ts': [],
}

const SETTINGS_MODULE = /^(?!model\/)[a-z-]+\/([a-z]+-)?settings\.ts$|^setting-parsers\.ts$/

/** The layer of a path relative to control/src: its first folder, or the file itself at the top. */
const layerOf = (path: string): string =>
  SETTINGS_MODULE.test(path) ? 'config.ts' : path.includes('/') ? path.slice(0, path.indexOf('/')) : path

/** Relative imports (static, type-only and dynamic) of one module, resolved against control/src. */
export function importsOf(path: string, text: string): string[] {
  const specs = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)['"](\.[^'"]+)['"]/gm)].map((m) => m[1]!)
  return specs.map((spec) => posix.normalize(posix.join(posix.dirname(path), spec)).replace(/\.js$/, '.ts'))
}

/** Why the import from `from` to `to` (both relative to control/src) breaks the direction, or null. */
export function violation(from: string, to: string): string | null {
  if (to.startsWith('../'))
    return `${from} reaches out of control/src with a relative import (${to}): other packages by name`
  const source = layerOf(from)
  const target = layerOf(to)
  if (from.startsWith('http/routes/') && to.startsWith('http/routes/'))
    return `${from} imports another route module, ${to}`
  if (source === target) return null
  const allowed = ALLOWED[source]
  if (allowed === undefined) return `${from} is in no known layer`
  return allowed.includes(target) ? null : `${from} (${source}) imports ${to} (${target}): against the direction`
}

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? modules(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  )
}

t.test('the check catches an upward import and a route importing a route', async (t) => {
  t.equal(
    violation('store/db.ts', 'http/app.ts'),
    'store/db.ts (store) imports http/app.ts (http): against the direction',
  )
  t.equal(
    violation('cluster/kube.ts', 'domain/builds.ts'),
    'cluster/kube.ts (cluster) imports domain/builds.ts (domain): against the direction',
  )
  t.equal(
    violation('config.ts', 'http/schemas/params.ts'),
    'config.ts (config.ts) imports http/schemas/params.ts (http): against the direction',
  )
  t.equal(
    violation('http/routes/sources.ts', 'http/routes/functions.ts'),
    'http/routes/sources.ts imports another route module, http/routes/functions.ts',
  )
  t.equal(violation('http/routes/builds.ts', 'domain/builds.ts'), null)
  t.equal(
    violation('domain/builds.ts', 'cluster/build-jobs.ts'),
    'domain/builds.ts (domain) imports cluster/build-jobs.ts (cluster): against the direction',
  )
  t.equal(
    violation('local/builds.ts', 'cluster/build-jobs.ts'),
    'local/builds.ts (local) imports cluster/build-jobs.ts (cluster): against the direction',
  )
  t.equal(violation('domain/policy.ts', 'local/settings.ts'), null, "a section's table is beneath every folder")
  t.equal(violation('config.ts', 'cluster/settings.ts'), null)
  t.equal(
    violation('cluster/settings.ts', 'cluster/kube.ts'),
    'cluster/settings.ts (config.ts) imports cluster/kube.ts (cluster): against the direction',
  )
  t.equal(
    violation('domain/policy-settings.ts', 'domain/policy.ts'),
    'domain/policy-settings.ts (config.ts) imports domain/policy.ts (domain): against the direction',
    'not even its own folder',
  )
  t.equal(
    violation('model/app-settings.ts', 'store/db.ts'),
    'model/app-settings.ts (model) imports store/db.ts (store): against the direction',
    "model/'s vocabulary stays in model/",
  )
  t.same(
    importsOf(
      'http/routes/x.ts',
      "import type { A } from '../route-deps.js'\nconst m = await import('../../store/db.js')\n",
    ),
    ['http/route-deps.ts', 'store/db.ts'],
  )
})

t.test('every import in control/src points down', async (t) => {
  const found: string[] = []
  const files = modules(srcDir)
  t.ok(files.length > 30, 'the modules were found')
  for (const file of files) {
    const path = relative(srcDir, file).split('\\').join('/')
    for (const to of importsOf(path, readFileSync(file, 'utf8'))) {
      const why = violation(path, to)
      if (why !== null) found.push(why)
    }
  }
  t.same(found, [], 'no import against the direction')
})
