// The test run's one loader hook (tap's "node-arg" loads it). Node runs TypeScript itself by
// stripping its types, which keeps every line and column where it was, so coverage needs no
// source maps. It does not map the compiled name a TypeScript import is written with
// (`./x.js`, as tsc's NodeNext wants) to the source beside it (`./x.ts`): this does. The
// transpiler tap loads by default cost about 3 s of CPU in every test file that imports the
// control plane.
//
// An asynchronous hook, on Node's hooks thread, like tap's own (coverage, t.mockImport): on
// Node 22 a synchronous one (module.registerHooks) beside them deadlocked t.mockImport.
import { register } from 'node:module'
import { isMainThread } from 'node:worker_threads'

if (isMainThread) register(import.meta.url)

export async function resolve(specifier, context, nextResolve) {
  if (
    specifier.endsWith('.js') &&
    (specifier.startsWith('./') || specifier.startsWith('../')) &&
    context.parentURL?.endsWith('.ts')
  ) {
    try {
      return await nextResolve(`${specifier.slice(0, -3)}.ts`, context)
    } catch (error) {
      if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error
    }
  }
  return nextResolve(specifier, context)
}
