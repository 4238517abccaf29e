// What the js engine seed is valid for: the files j2w's native code comes from. wizer (inside
// componentize-js) compiles the engine componentize-js splices from its StarlingMonkey build,
// and wasmtime keys that cache entry by the module's bytes, the compiler's flags and its own
// version; the same engine, splicer and wizer binary give the same entry, anything else a
// different one. So the seed is named by the hash of those files' content, not by version
// strings a reinstall could keep while changing the bytes.
import { createHash } from 'node:crypto'
import { createReadStream, existsSync } from 'node:fs'
import { stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'

/** The package directory `name` resolves to from `from`, as Node looks it up (its package.json is not exported). */
function packageDir(name: string, from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name)
    if (existsSync(join(candidate, 'package.json'))) return candidate
    if (dirname(dir) === dir) throw new Error(`${name} is not installed beside ${from}`)
  }
}

/** The engine and splicer componentize-js ships, and the wizer binary it runs, for `buildTools` (build-tools' package directory). */
export async function engineFiles(buildTools: string): Promise<string[]> {
  const componentize = packageDir('@bytecodealliance/componentize-js', buildTools)
  const wizerIndex = join(packageDir('@bytecodealliance/wizer', componentize), 'index.js')
  const wizer = ((await import(pathToFileURL(wizerIndex).href)) as { default: string }).default
  const lib = join(componentize, 'lib')
  return [
    join(lib, 'starlingmonkey_embedding.wasm'),
    join(lib, 'spidermonkey-embedding-splicer.core.wasm'),
    join(lib, 'spidermonkey-embedding-splicer.core2.wasm'),
    wizer,
  ]
}

/** The seed's name: sha256 over the engine files' contents, each prefixed by its length. */
export async function engineSeedKey(files: string[]): Promise<string> {
  const hash = createHash('sha256')
  for (const file of files) {
    hash.update(`${(await stat(file)).size}\n`)
    for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer)
  }
  return hash.digest('hex')
}
