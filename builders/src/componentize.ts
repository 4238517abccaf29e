// A wasip1 module (what cargo makes for wasm32-wasip1 with the Spin Rust SDK) made a component
// with the WASI preview 1 adapter, as `spin build` does for Spin 3.x's Rust template: the
// SDK's bindings ride in the module's component-type section; the adapter maps its
// wasi_snapshot_preview1 imports onto WASI 0.2. wasm-tools' component new, from jco-transpile
// (a dependency the builder already has).
import { readFile, writeFile } from 'node:fs/promises'
import { componentNew } from '@bytecodealliance/jco-transpile/wasm-tools'

export async function componentize(modulePath: string, adapterPath: string, output: string): Promise<void> {
  const [module, adapter] = await Promise.all([readFile(modulePath), readFile(adapterPath)])
  await writeFile(output, await componentNew(module, [['wasi_snapshot_preview1', adapter]]))
}
