// The escapes a tenant's source was found to make through a build, each kept shut: a canary file
// (a secret readable by every user of the machine), a marker path and a counting server on
// loopback are planted in hostile source; the build must not read, write or reach any of them.
// The archives go to the builder directly, as a source stored before the API refused these paths
// would reach it.
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { templateFiles } from '@session-relay/spin/templates'
import { startCanary } from '../helpers/canary.js'
import { buildAndRead } from '../helpers/compiled-builds.js'

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
