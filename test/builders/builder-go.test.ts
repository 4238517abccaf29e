// The go builder end to end with real parts: stock Go (the `go` on PATH, GOOS=wasip1) builds
// the template into a wasip1 command module, pushed to a real registry in the Spin format with
// the WAGI executor in the locked app, then loaded into the wasmtime worker and invoked. A
// compile error fails with the file and line. The first build compiles Go's standard library
// for wasip1 (96-116 s at load 17); DEPENDENCY_CACHE keeps it in .cache/test-go-deps for the
// next build and the next run, as the local runtime keeps an application's.
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { templateFiles } from '@session-relay/spin/templates'
import { buildAndRead, checkSpinFormat, invokeThroughWorker } from '../helpers/compiled-builds.js'
import { until } from '../helpers/wait.js'

t.setTimeout(400_000)

// Node's WebAssembly.Module, typed here: the project's TypeScript libs leave out the DOM's.
type ModuleApi = {
  new (bytes: Uint8Array): object
  exports(module: object): Array<{ name: string }>
  imports(module: object): Array<{ module: string }>
  customSections(module: object, name: string): ArrayBuffer[]
}
const WasmModule = (globalThis as unknown as { WebAssembly: { Module: ModuleApi } }).WebAssembly.Module

const deps = join(fileURLToPath(new URL('../../', import.meta.url)), '.cache', 'test-go-deps')

t.test('the go template builds, pushes in the Spin format and answers through the worker', async (t) => {
  const { build, built } = await buildAndRead(t, 'go', templateFiles('go', 'hello'), { DEPENDENCY_CACHE: deps })
  if (built === null) return t.fail(build.log)
  t.comment(`go template build + push: ${build.ms} ms, module ${built.wasm.length} bytes`)
  checkSpinFormat(t, built, { type: 'wagi' })
  t.equal(built.wasm.subarray(0, 8).toString('hex'), '0061736d01000000', 'a core module (WAGI runs wasip1 commands)')
  // What makes containerd-shim-spin's precompile (spin_componentize::componentize_if_necessary)
  // wrap it with the command adapter, which the WAGI executor runs: a `_start` export, no sign
  // of wit-bindgen (cabi_realloc) and no clang older than 15.0.7 among its producers.
  const module = new WasmModule(built.wasm)
  const exports = WasmModule.exports(module).map((entry) => entry.name)
  t.ok(exports.includes('_start'), 'a wasip1 command: it exports _start')
  t.notOk(exports.includes('cabi_realloc'), 'no wit-bindgen export')
  const producers = WasmModule.customSections(module, 'producers').map((section) =>
    Buffer.from(section).toString('latin1'),
  )
  t.notMatch(producers.join(''), /clang/, 'no clang among its producers (wasi-libc bug 377 check)')
  t.same(
    WasmModule.imports(module)
      .map((entry) => entry.module)
      .filter((name, index, all) => all.indexOf(name) === index),
    ['wasi_snapshot_preview1'],
    'it imports WASI preview 1 only',
  )
  const answer = await invokeThroughWorker(t, built, '/hello/deeper?x=1')
  t.equal(answer.status, 200)
  t.equal(answer.text, 'hello from hello\n')
  t.equal(answer.headers.get('x-request-path'), '/hello/deeper')
  await until(
    () => answer.log().includes('hello: GET /hello/deeper'),
    5_000,
    "the function's stderr in the worker's log",
  )
  t.pass("the function's stderr is the application's log")
})

t.test(
  'a go compile error fails the build with the file and line in the termination log and the build log',
  async (t) => {
    const files = templateFiles('go', 'hello')
    files['main.go'] = (files['main.go'] as string).replace(
      'fmt.Fprintln(w, "hello from hello")',
      'fmt.Fprintln(w, undefinedName)',
    )
    const { build } = await buildAndRead(t, 'go', files, { DEPENDENCY_CACHE: deps })
    t.equal(build.code, 1)
    t.match(build.termination, /^function hello: functions\/hello\/main\.go:18:18: undefined: undefinedName$/)
    t.match(build.log, /main\.go:18:18: undefined: undefinedName/)
  },
)
