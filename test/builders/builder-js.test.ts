// The js builder end to end with real parts: the template built by the builder program (a
// child process, configured as a build Job's container is), pushed to a real registry with
// htpasswd credentials, the manifest read back field by field, then pulled and loaded into
// the wasmtime worker as the local runtime does, and invoked. One j2w build in this file (each takes 6-25 s and ~600 MB).
import t from 'tap'
import type { ImageConfig, ImageManifest, LockedApp } from '@session-relay/spin/format'
import { templateFiles } from '@session-relay/spin/templates'
import { dockerConfigDir, startRegistry } from '../helpers/registry.js'
import { runBuilder, sourceArchive } from '../helpers/spin-processes.js'
import { serveImage } from '../helpers/worker.js'
import { until } from '../helpers/wait.js'

const BUILD_TIMEOUT = 240_000
// One whole build (BUILD_TIMEOUT), then three runs that stop before or in the bundler.
t.setTimeout(BUILD_TIMEOUT + 180_000)

t.test(
  'the js template builds, pushes in the Spin format and answers through the worker',
  { timeout: BUILD_TIMEOUT },
  async (t) => {
    const registry = await startRegistry(t, { auth: true })
    const config = await dockerConfigDir(t, registry.host, registry.credentials!)
    const archive = await sourceArchive(t, { name: 'demo', language: 'js' }, [
      { name: 'hello', route: '/hello/...', files: templateFiles('js', 'hello') },
    ])
    const build = await runBuilder(t, {
      SOURCE_ARCHIVE: archive,
      IMAGE_REF: `${registry.host}/apps/demo:b1`,
      APPLICATION: 'demo',
      LANGUAGE: 'js',
      BUILD_ID: 'b1',
      DOCKER_CONFIG: config,
    })
    t.equal(build.code, 0, build.code === 0 ? 'the build succeeded' : build.log)
    t.match(build.termination, new RegExp(`^${registry.host.replace(/\./g, '\\.')}/apps/demo@sha256:[a-f0-9]{64}$`))
    t.comment(`js template build + push: ${build.ms} ms`)
    const digest = build.termination.slice(build.termination.indexOf('@') + 1)

    const auth = `Basic ${Buffer.from(`${registry.credentials!.username}:${registry.credentials!.password}`).toString('base64')}`
    const get = async (path: string) =>
      fetch(`${registry.url}/v2/apps/demo/${path}`, {
        headers: { authorization: auth, accept: 'application/vnd.oci.image.manifest.v1+json' },
      })
    const manifestResponse = await get(`manifests/${digest}`)
    t.equal(manifestResponse.status, 200)
    const manifest = (await manifestResponse.json()) as ImageManifest
    t.equal(manifest.mediaType, 'application/vnd.oci.image.manifest.v1+json')
    t.equal(manifest.config.mediaType, 'application/vnd.oci.image.config.v1+json')
    t.same(
      manifest.layers.map((layer) => layer.mediaType),
      ['application/vnd.wasm.content.layer.v1+wasm', 'application/vnd.fermyon.spin.application.v1+config'],
    )
    const config2 = (await (await get(`blobs/${manifest.config.digest}`)).json()) as ImageConfig
    t.equal(config2.config.Labels['com.fermyon.spin.lockedAppDigest'], manifest.layers[1]!.digest)
    const lock = (await (await get(`blobs/${manifest.layers[1]!.digest}`)).json()) as LockedApp
    t.equal(lock.spin_lock_version, 1)
    t.same(lock.triggers, [
      { id: 'hello-http-trigger', trigger_type: 'http', trigger_config: { component: 'hello', route: '/hello/...' } },
    ])
    t.same(lock.components, [
      {
        id: 'hello',
        metadata: { allowed_outbound_hosts: [] },
        source: { content_type: 'application/wasm', digest: manifest.layers[0]!.digest },
        config: { greeting: '{{ greeting }}' },
      },
    ])
    t.same(lock.variables, { greeting: { default: 'hello' } }, "the template's variables.toml, locked")
    t.ok(manifest.layers[0]!.size > 1_000_000, 'the wasm layer holds a real component')

    let started = Date.now()
    const served = await serveImage(t, build.termination, { dockerConfigDir: config })
    t.equal(served.digest, digest)
    t.comment(`pull + load (compile included): ${Date.now() - started} ms`)
    started = Date.now()
    const first = await fetch(`${served.url}/hello`)
    t.comment(`first request: ${Date.now() - started} ms`)
    t.equal(first.status, 200)
    t.equal(await first.text(), 'hello from hello\n')
    started = Date.now()
    const below = await fetch(`${served.url}/hello/deeper/path?x=1`)
    t.comment(`warm request: ${Date.now() - started} ms`)
    t.equal(await below.text(), 'hello from hello\n')
    t.equal(below.headers.get('x-request-path'), '/hello/deeper/path')
    await until(
      () => served.log().includes('hello: GET /hello/deeper/path'),
      5_000,
      "the component's log line in the worker's log",
    )
    t.pass("the component's stdout is the application's log")
    const none = await fetch(`${served.url}/elsewhere`)
    t.equal(none.status, 404)
    await none.body?.cancel()
  },
)

t.test(
  'a syntax error fails the build with exit 1 and the file and line in the termination log and the build log',
  async (t) => {
    const files = templateFiles('js', 'hello')
    files['src/index.js'] = "addEventListener('fetch', (event) => {\n  event.respondWith(new Response('x')\n})\n"
    const archive = await sourceArchive(t, { name: 'demo', language: 'js' }, [
      { name: 'hello', route: '/hello/...', files },
    ])
    const dir = t.testdir({})
    const build = await runBuilder(t, {
      SOURCE_ARCHIVE: archive,
      IMAGE_REF: `oci-layout:${dir}:b1`,
      APPLICATION: 'demo',
      LANGUAGE: 'js',
      BUILD_ID: 'b1',
    })
    t.equal(build.code, 1)
    t.match(
      build.termination,
      /^function hello: functions\/hello\/src\/index\.js:3:1: error: Expected "\)" but found "}"$/,
    )
    t.match(build.log, /functions\/hello\/src\/index\.js:3:1: error: /)
  },
)

t.test('a js function that does not depend on the http world is refused before any build', async (t) => {
  const files = templateFiles('js', 'hello')
  files['package.json'] = JSON.stringify({ name: 'hello', dependencies: { 'left-pad': '1.3.0' } })
  const archive = await sourceArchive(t, { name: 'demo', language: 'js' }, [
    { name: 'hello', route: '/hello/...', files },
  ])
  const build = await runBuilder(t, {
    SOURCE_ARCHIVE: archive,
    IMAGE_REF: `oci-layout:${t.testdir({})}:b1`,
    APPLICATION: 'demo',
    LANGUAGE: 'js',
    BUILD_ID: 'b1',
  })
  t.equal(build.code, 1)
  t.equal(build.termination, 'functions/hello/package.json: dependencies must include @spinframework/wasi-http-proxy')
})

t.test('settings that do not parse exit 2 with the reason in the termination log', async (t) => {
  const build = await runBuilder(t, {
    SOURCE_ARCHIVE: '/nonexistent.tar.gz',
    IMAGE_REF: 'not a ref',
    APPLICATION: 'demo',
    LANGUAGE: 'js',
    BUILD_ID: 'b1',
  })
  t.equal(build.code, 2)
  t.match(build.termination, /^builder misconfigured: invalid value "not a ref" for IMAGE_REF/)
})
