// The paths toolchains read as configuration: refused by the source checks (both ways a source
// arrives go through checkFiles) and left out of a build by the builder, at every depth that
// matters, whatever else the path holds.
import fc from 'fast-check'
import t from 'tap'
import { checkFiles } from '@session-relay/spin/source/files'
import { TOOLCHAIN_PATHS, toolchainPathProblem } from '@session-relay/spin/source/toolchain-paths'
import { buildableFiles } from '@session-relay/builders/source-files'
import { fuzzOptions } from '../helpers/fuzz.js'

const LIMITS = { maxFiles: 1000, maxBytes: 1024 * 1024 }
const refusal = (files: Record<string, string>): string | null => {
  try {
    checkFiles(files, LIMITS)
    return null
  } catch (error) {
    return (error as Error).message
  }
}

t.test('each name is refused where its toolchain reads it, and only there', async (t) => {
  for (const name of TOOLCHAIN_PATHS.anyDepth) {
    for (const path of [`${name}/x`, `src/${name}/x`, `a/b/c/${name}/config`, name]) {
      t.match(
        refusal({ [path]: 'x' }),
        new RegExp(`^invalid file path .*"${name.replace('.', '\\.')}" is read by`),
        path,
      )
    }
  }
  for (const name of TOOLCHAIN_PATHS.atRoot) {
    t.match(refusal({ [name]: 'x' }), /is read by the build's toolchain as its configuration$/, name)
    t.match(refusal({ [`${name}/x`]: 'x' }), /is read by/, `${name}/x`)
    t.equal(refusal({ [`src/${name}`]: 'x' }), null, `src/${name} is the function's own file`)
  }
  for (const path of ['src/git/x', 'src/.gitignore', 'my.cargo/x', 'node_modules.txt', 'src/targets.rs', '.github/x'])
    t.equal(toolchainPathProblem(path), null, `${path} is allowed`)
})

const reserved = [...TOOLCHAIN_PATHS.anyDepth, ...TOOLCHAIN_PATHS.atRoot]
const segment = fc.oneof(
  fc.constantFrom(...reserved, 'src', 'lib', '.config', 'a.git', '.gitx', 'Target', 'GO.WORK', '.Cargo'),
  fc.stringMatching(/^[a-z._-]{1,8}$/).filter((part) => part !== '.' && part !== '..'),
)

t.test('fast-check: a generated source passes exactly when no part is a toolchain path', async () => {
  fc.assert(
    fc.property(
      fc.array(fc.array(segment, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 8 }),
      (paths) => {
        const files = Object.fromEntries(paths.map((parts) => [parts.join('/'), 'x']))
        // Only sets that are otherwise valid (no file that is also a directory) say anything here.
        const names = Object.keys(files)
        if (names.some((a) => names.some((b) => b.startsWith(`${a}/`)))) return
        const hostile = paths.some(
          (parts) =>
            parts.some((part) => TOOLCHAIN_PATHS.anyDepth.includes(part)) ||
            TOOLCHAIN_PATHS.atRoot.includes(parts[0] as string),
        )
        const reason = refusal(files)
        if (hostile !== (reason !== null)) throw new Error(`${JSON.stringify(names)}: ${reason ?? 'accepted'}`)
        // The builder keeps exactly the files the source checks accept.
        const archive = Object.fromEntries(names.map((name) => [`functions/f/${name}`, 'x']))
        const { kept } = buildableFiles(archive)
        for (const name of names) {
          const allowed = toolchainPathProblem(name) === null
          if (allowed !== `functions/f/${name}` in kept) throw new Error(`the builder disagrees on ${name}`)
        }
      },
    ),
    fuzzOptions(5),
  )
})

t.test('the builder writes spin.toml and function files only, and says what it left out', async (t) => {
  const { kept, ignored } = buildableFiles({
    'spin.toml': 'x',
    'functions/f/main.go': 'package main',
    'functions/f/.git/config': '[core]',
    'functions/f/node_modules/@spinframework/wasi-http-proxy/package.json': '{}',
    '.cargo/config.toml': '[build]',
    'other.txt': 'x',
  })
  t.same(Object.keys(kept).sort(), ['functions/f/main.go', 'spin.toml'])
  t.same(ignored.sort(), [
    `ignored .cargo/config.toml: outside every function directory`,
    `ignored functions/f/.git/config: ".git" is read by the build's toolchain as its configuration, at any depth`,
    `ignored functions/f/node_modules/@spinframework/wasi-http-proxy/package.json: "node_modules" is read by the build's toolchain as its configuration, at any depth`,
    `ignored other.txt: outside every function directory`,
  ])
})
