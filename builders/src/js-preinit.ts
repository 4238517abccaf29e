// componentize-js takes the js engine's snapshot (the function's top level run once, at build
// time) with the wizer binary its npm package ships, whose Cranelift compile of the 10 MB
// engine is most of a js application's first build: about 14 CPU-seconds. The local runtime
// has a faster one, the worker's `preinit` (worker/src/bin/preinit: Winch, about 1.8), and the
// sandbox puts it in the shipped binary's place, read-only, for the js steps: componentize-js
// has no option to run another.
//
// The same way, the WASI preview 1 adapter componentize-js links (jco's) is replaced by
// wasmtime 36's, the rust builds' own, which preinit writes (`--write-adapter`): jco's copies
// memory byte loop by byte loop where wasmtime's uses `memory.copy`, about 3 µs of each request
// that logs (bench/RESULTS.md).
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import type { Bind } from './sandbox/bwrap.js'

const COMPONENTIZE = '@bytecodealliance/componentize-js'
const WIZER = '@bytecodealliance/wizer'
const JCO = '@bytecodealliance/jco'
/** Where jco keeps the adapter componentize-js links (jco's `preview1AdapterReactorPath`). */
const JCO_ADAPTER = 'lib/wasi_snapshot_preview1.reactor.wasm'

// A package's directory as Node finds it from `from` (a directory): componentize-js and jco
// export their modules for import only, so `require.resolve` of their package.json fails.
function packageDir(name: string, from: string): string {
  const dir = (createRequire(join(from, 'package.json')).resolve.paths(name) ?? [])
    .map((modules) => join(modules, name))
    .find((candidate) => existsSync(join(candidate, 'package.json')))
  if (dir === undefined) throw new Error(`${name} is not installed beside ${from}`)
  return dir
}

/** Where the componentize-js that `buildTools` runs finds its wizer binary. */
export async function shippedWizer(buildTools: string): Promise<string> {
  const index = createRequire(join(packageDir(COMPONENTIZE, buildTools), 'package.json')).resolve(WIZER)
  const location = ((await import(pathToFileURL(index).href)) as { default: unknown }).default
  if (typeof location !== 'string') throw new Error(`${WIZER} names no binary`)
  return location
}

/** The preview 1 adapter the componentize-js that `buildTools` runs links into a component. */
export function shippedAdapter(buildTools: string): string {
  const adapter = join(packageDir(JCO, packageDir(COMPONENTIZE, buildTools)), JCO_ADAPTER)
  if (!existsSync(adapter)) throw new Error(`no preview 1 adapter at ${adapter}`)
  return adapter
}

export type PreinitBinds = {
  /** preinit over componentize-js's wizer, wasmtime's adapter over jco's. */
  binds: Bind[]
  /** Removes the adapter's directory. */
  dispose: () => Promise<void>
}

/** What puts `preinit` and its adapter where componentize-js looks, for one build. */
export async function preinitBinds(preinit: string, buildTools: string): Promise<PreinitBinds> {
  if (!existsSync(preinit)) throw new Error(`no js pre-initializer at ${preinit}`)
  const [wizer, jcoAdapter] = [await shippedWizer(buildTools), shippedAdapter(buildTools)]
  // The builder's own directory, out of the build's reach.
  const dir = await mkdtemp(join(tmpdir(), 'js-adapter-'))
  const dispose = () => rm(dir, { recursive: true, force: true })
  const adapter = join(dir, 'adapter.wasm')
  try {
    await promisify(execFile)(preinit, ['--write-adapter', adapter])
    // Read by the steps' user (65534) whatever the control plane's umask (077).
    await chmod(adapter, 0o644)
  } catch (error) {
    await dispose()
    throw new Error(`${preinit} wrote no adapter: ${(error as Error).message}`)
  }
  return {
    binds: [
      { from: preinit, to: wizer },
      { from: adapter, to: jcoAdapter },
    ],
    dispose,
  }
}
