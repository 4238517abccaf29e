// The worker's preinit in componentize-js's wizer's place (builders/src/js-preinit.ts), with
// real parts: the builder program in its bwrap sandbox, the preinit binary the worker's cargo
// build makes, the component loaded into the real worker. What shows preinit ran and wizer
// did not: its compiled engine in the application's cache home (.cache/preinit), where wizer
// would have left wasmtime's cache (.cache/wasmtime). And preinit's adapter in jco's place:
// the component imports WASI at the version of the worker's wasmtime, not jco's.
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import type { Test } from 'tap'
import { shippedAdapter, shippedWizer } from '@session-relay/builders/js-preinit'
import { buildToolsDir } from '@session-relay/builders/build-app'
import { templateFiles } from '@session-relay/spin/templates'
import { runBuilder, sourceArchive } from '../helpers/spin-processes.js'
import { PREINIT, serveImage } from '../helpers/worker.js'

const BUILD_TIMEOUT = 120_000
t.setTimeout(4 * BUILD_TIMEOUT)

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'js-preinit-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

async function build(t: Test, dir: string, files: Record<string, string>, extra: Record<string, string> = {}) {
  const archive = await sourceArchive(t, { name: 'demo', language: 'js' }, [
    { name: 'hello', route: '/hello/...', files },
  ])
  return runBuilder(t, {
    SOURCE_ARCHIVE: archive,
    IMAGE_REF: `oci-layout:${join(dir, 'images')}:b1`,
    APPLICATION: 'demo',
    LANGUAGE: 'js',
    BUILD_ID: 'b1',
    DEPENDENCY_CACHE: join(dir, 'deps'),
    JS_PREINITIALIZER: PREINIT,
    ...extra,
  })
}

const cacheEntries = async (dir: string, tool: string): Promise<string[]> => {
  const path = join(dir, 'deps/home/.cache', tool)
  return existsSync(path) ? readdir(path) : []
}

t.test("componentize-js's wizer is found where componentize-js finds it", async (t) => {
  const wizer = await shippedWizer(buildToolsDir())
  t.match(wizer, /\/node_modules\/@bytecodealliance\/wizer-[a-z0-9]+-[a-z0-9]+\/wizer$/)
  t.ok((await stat(wizer)).isFile())
})

t.test("jco's adapter is found where componentize-js takes it from", async (t) => {
  const adapter = shippedAdapter(buildToolsDir())
  // jco's own answer, from the jco found there.
  const api = join(dirname(dirname(adapter)), 'src/api.js')
  const jco = (await import(pathToFileURL(api).href)) as { preview1AdapterReactorPath: () => URL }
  t.equal(adapter, jco.preview1AdapterReactorPath().pathname)
})

// The WASI version a preview 1 adapter (or a component linking it) imports wasi:cli/stdout at.
const stdoutVersion = (wasm: Buffer): string | undefined =>
  /wasi:cli\/stdout@([0-9.]+)/.exec(wasm.toString('latin1'))?.[1]

t.test(
  'the template, pre-initialized by preinit, answers; its next build reuses the compiled engine',
  { timeout: 2 * BUILD_TIMEOUT },
  async (t) => {
    const dir = await tempDir(t)
    const first = await build(t, dir, templateFiles('js', 'hello'))
    t.equal(first.code, 0, first.code === 0 ? 'the build succeeded' : first.log)
    const entries = await cacheEntries(dir, 'preinit')
    t.equal(entries.length, 1, "preinit's compiled engine, kept in the application's cache home")
    t.same(await cacheEntries(dir, 'wasmtime'), [], "wizer's wasmtime cache: none, wizer did not run")
    const kept = await stat(join(dir, 'deps/home/.cache/preinit', entries[0]!))

    const served = await serveImage(t, first.termination)
    const response = await fetch(`${served.url}/hello`)
    t.equal(response.status, 200)
    t.equal(await response.text(), 'hello from hello\n', "the snapshot's code runs in the worker")

    await promisify(execFile)(PREINIT, ['--write-adapter', join(dir, 'adapter.wasm')])
    const ours = stdoutVersion(await readFile(join(dir, 'adapter.wasm')))
    const jcos = stdoutVersion(await readFile(shippedAdapter(buildToolsDir())))
    t.ok(ours !== undefined && jcos !== undefined && ours !== jcos, `the two adapters differ (${ours}, ${jcos})`)
    const component = await readFile(served.components.hello!)
    t.equal(stdoutVersion(component), ours, "the component links preinit's adapter")

    await rm(join(dir, 'images'), { recursive: true })
    const second = await build(t, dir, templateFiles('js', 'hello'))
    t.equal(second.code, 0, second.code === 0 ? 'the second build succeeded' : second.log)
    const again = await stat(join(dir, 'deps/home/.cache/preinit', entries[0]!))
    t.equal(again.mtimeMs, kept.mtimeMs, 'the same entry, read and not written again')
  },
)

t.test("an error in the function's top level reaches the build log", { timeout: BUILD_TIMEOUT }, async (t) => {
  const dir = await tempDir(t)
  const files = templateFiles('js', 'hello')
  files['src/index.js'] = `${files['src/index.js']}\nthrow new Error('the top level broke')\n`
  const result = await build(t, dir, files)
  t.not(result.code, 0, 'the build fails')
  t.match(result.log, 'the top level broke')
})

t.test("a top level that never ends is stopped by the step's CPU limit", { timeout: BUILD_TIMEOUT }, async (t) => {
  const dir = await tempDir(t)
  const files = templateFiles('js', 'hello')
  files['src/index.js'] = `${files['src/index.js']}\nwhile (true) {}\n`
  const result = await build(t, dir, files, { BUILD_STEP_CPU: '8s' })
  t.not(result.code, 0, 'the build fails')
  t.match(
    result.log,
    "preinit: out of CPU time (8 s, the build step's limit): the function's top level, run once at build time, did not finish",
    'the log says why',
  )
})

t.test('a pre-initializer that is not there fails the build, naming it', async (t) => {
  const dir = await tempDir(t)
  const result = await build(t, dir, templateFiles('js', 'hello'), { JS_PREINITIALIZER: join(dir, 'nothing') })
  t.not(result.code, 0)
  t.match(result.termination, `no js pre-initializer at ${join(dir, 'nothing')}`)
})
