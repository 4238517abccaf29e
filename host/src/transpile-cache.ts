// Components transpiled to JavaScript (jco-transpile, instantiation "sync" so each request can
// get a fresh instance), cached on disk by the wasm's digest: a component is transpiled once
// per machine, not per start. Written to a temporary directory and renamed, so a crash or a
// concurrent host never leaves half a cache entry.
import { randomUUID } from 'node:crypto'
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { dirname, isAbsolute, join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { transpileBytes } from '@bytecodealliance/jco-transpile'

// The global WebAssembly, typed by hand: the project's lib (ES2023, no DOM) leaves it out.
type CoreModule = object
const webAssembly = (globalThis as unknown as { WebAssembly: { Module: new (bytes: Uint8Array) => CoreModule; promising?: (f: unknown) => unknown } }).WebAssembly
const { Module: WasmModule } = webAssembly

// jco's generated setup wraps two exports with WebAssembly.promising (JS promise integration)
// and, where it throws, keeps the export itself. Node 22 has no `promising`: the TypeError
// thrown and caught on every instantiation cost about half of a request's CPU (measured: 85
// to 31.5 ms per request with this line). Returning the export is what the fallback does.
if (typeof webAssembly.promising !== 'function') webAssembly.promising = (f) => f

type Instantiate = (getCoreModule: (path: string) => CoreModule, imports: Record<string, unknown>) => {
  incomingHandler?: { handle: (request: unknown, responseOutparam: unknown) => void }
}

export type TranspiledComponent = { instantiate: Instantiate; getCoreModule: (path: string) => CoreModule }

const NAME = 'component'

export async function transpiled (cacheDir: string, digest: string, wasm: Uint8Array): Promise<TranspiledComponent> {
  const dir = join(cacheDir, digest.replace(':', '-'))
  if (!(await exists(join(dir, `${NAME}.js`)))) {
    try {
      await transpileInto(dir, wasm)
    } catch (error) {
      // jco's own message is a parser's ("expected `(`") and names no layer: say which one.
      const first = (error as Error).message.split('\n')[0] as string
      throw new Error(`the wasm layer ${digest} is not a component jco can transpile: ${first}`)
    }
  }
  const module = await import(pathToFileURL(join(dir, `${NAME}.js`)).href) as { instantiate: Instantiate }
  // Compiled once, instantiated per request.
  const modules = new Map<string, CoreModule>()
  const bytes = new Map<string, Buffer>()
  for (const [path, content] of await coreModules(dir)) bytes.set(path, content)
  const getCoreModule = (path: string): CoreModule => {
    let compiled = modules.get(path)
    if (compiled === undefined) {
      const content = bytes.get(path)
      if (content === undefined) throw new Error(`the transpiled component has no core module ${path}`)
      compiled = new WasmModule(content)
      modules.set(path, compiled)
    }
    return compiled
  }
  return { instantiate: module.instantiate, getCoreModule }
}

async function transpileInto (dir: string, wasm: Uint8Array): Promise<void> {
  const temporary = `${dir}.${randomUUID()}.tmp`
  const { files } = await transpileBytes(wasm, { name: NAME, instantiation: 'sync', wasiShim: true, outDir: temporary, emitTypescriptDeclarations: false })
  for (const [path, content] of Object.entries(files)) {
    const target = isAbsolute(path) ? path : join(temporary, path)
    if (relative(temporary, target).startsWith('..')) throw new Error(`jco-transpile wrote outside its directory: ${path}`)
    await mkdir(dirname(target), { recursive: true })
    await writeFile(target, content)
  }
  // The generated module is ESM.
  await writeFile(join(temporary, 'package.json'), '{"type":"module"}')
  try {
    await rename(temporary, dir)
  } catch (error) {
    // Another host got there first: its copy is as good.
    await rm(temporary, { recursive: true, force: true })
    if (!(await exists(join(dir, `${NAME}.js`)))) throw error
  }
}

async function coreModules (dir: string): Promise<Array<[string, Buffer]>> {
  const { readdir } = await import('node:fs/promises')
  const names = (await readdir(dir)).filter((name) => name.endsWith('.wasm'))
  return Promise.all(names.map(async (name): Promise<[string, Buffer]> => [name, await readFile(join(dir, name))]))
}

async function exists (path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch {
    return false
  }
}
