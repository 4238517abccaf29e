// The pulled components (wasm files by digest, shared by applications that have the same one)
// of an application removed: deleted unless another application still uses them.
import { rmSync } from 'node:fs'

/** Deletes each of `paths` that is not in `inUse`. */
export function removeUnusedWasm(paths: Iterable<string>, inUse: Iterable<string>): void {
  const used = new Set(inUse)
  for (const path of paths) if (!used.has(path)) rmSync(path, { force: true })
}
