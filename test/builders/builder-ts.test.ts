// The ts builder end to end into the no-cluster store: the template built by the builder
// program into an OCI image-layout directory, then pulled from there and loaded into the wasmtime
// worker as the local runtime does. One
// j2w build in this file.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { templateFiles } from '@session-relay/spin/templates'
import { runBuilder, sourceArchive } from '../helpers/spin-processes.js'
import { serveImage } from '../helpers/worker.js'

const BUILD_TIMEOUT = 240_000
// One whole build (BUILD_TIMEOUT), then a run that stops in the TypeScript check.
t.setTimeout(BUILD_TIMEOUT + 120_000)

t.test(
  'the ts template builds into an image-layout directory and answers through the worker',
  { timeout: BUILD_TIMEOUT },
  async (t) => {
    const store = t.testdir({})
    const archive = await sourceArchive(t, { name: 'shop', language: 'ts' }, [
      { name: 'greet', route: '/greet/...', files: templateFiles('ts', 'greet') },
      { name: 'root', route: '/...', files: templateFiles('ts', 'root') },
    ])
    const build = await runBuilder(t, {
      SOURCE_ARCHIVE: archive,
      IMAGE_REF: `oci-layout:${store}:b7`,
      APPLICATION: 'shop',
      LANGUAGE: 'ts',
      BUILD_ID: 'b7',
    })
    t.equal(build.code, 0, build.code === 0 ? 'the build succeeded' : build.log)
    t.match(build.termination, new RegExp(`^oci-layout:${store}@sha256:[a-f0-9]{64}$`))
    t.comment(`ts template build (2 functions) + push: ${build.ms} ms`)
    const index = JSON.parse(await readFile(join(store, 'index.json'), 'utf8'))
    t.equal(index.manifests[0].annotations['org.opencontainers.image.ref.name'], 'b7')

    const served = await serveImage(t, `oci-layout:${store}:b7`)
    t.equal(`oci-layout:${store}@${served.digest}`, build.termination)
    const greet = await fetch(`${served.url}/greet/someone`)
    t.equal(await greet.text(), 'hello from greet\n')
    const root = await fetch(`${served.url}/anything/else`)
    t.equal(await root.text(), 'hello from root\n', 'the longer prefix wins, /... takes the rest')
    const again = await fetch(`${served.url}/greet`)
    t.equal(await again.text(), 'hello from greet\n', 'every request gets its own instance')
  },
)

t.test('a ts syntax error names the ts file and line', async (t) => {
  const files = templateFiles('ts', 'greet')
  files['src/index.ts'] = 'const x: number = \n'
  const archive = await sourceArchive(t, { name: 'shop', language: 'ts' }, [
    { name: 'greet', route: '/greet/...', files },
  ])
  const build = await runBuilder(t, {
    SOURCE_ARCHIVE: archive,
    IMAGE_REF: `oci-layout:${t.testdir({})}:b1`,
    APPLICATION: 'shop',
    LANGUAGE: 'ts',
    BUILD_ID: 'b1',
  })
  t.equal(build.code, 1)
  t.match(build.termination, /^function greet: functions\/greet\/src\/index\.ts:2:0?1?: error: Unexpected end of file/)
})
