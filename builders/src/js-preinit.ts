// componentize-js takes the js engine's snapshot (the function's top level run once, at build
// time) with the wizer binary its npm package ships, whose Cranelift compile of the 10 MB
// engine is most of a js application's first build: about 14 CPU-seconds. The local runtime
// has a faster one, the worker's `preinit` (worker/src/bin/preinit: Winch, about 1.8), and the
// sandbox puts it in the shipped binary's place, read-only, for the js steps: componentize-js
// has no option to run another.
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Bind } from './sandbox/bwrap.js'

const COMPONENTIZE = '@bytecodealliance/componentize-js'
const WIZER = '@bytecodealliance/wizer'

/** Where the componentize-js that `buildTools` runs finds its wizer binary. */
export async function shippedWizer(buildTools: string): Promise<string> {
  const fromBuildTools = createRequire(join(buildTools, 'package.json'))
  // componentize-js exports its module for import only: found by its directory, as Node would.
  const componentize = (fromBuildTools.resolve.paths(COMPONENTIZE) ?? [])
    .map((modules) => join(modules, COMPONENTIZE))
    .find((dir) => existsSync(join(dir, 'package.json')))
  if (componentize === undefined) throw new Error(`${COMPONENTIZE} is not installed beside ${buildTools}`)
  const index = createRequire(join(componentize, 'package.json')).resolve(WIZER)
  const location = ((await import(pathToFileURL(index).href)) as { default: unknown }).default
  if (typeof location !== 'string') throw new Error(`${WIZER} names no binary`)
  return location
}

/** The bind that runs `preinit` where componentize-js runs its wizer. */
export async function preinitBind(preinit: string, buildTools: string): Promise<Bind> {
  if (!existsSync(preinit)) throw new Error(`no js pre-initializer at ${preinit}`)
  return { from: preinit, to: await shippedWizer(buildTools) }
}
