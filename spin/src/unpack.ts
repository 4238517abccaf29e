// A Spin application pulled by reference (a registry or an OCI layout, checked as the shim
// checks it: spin/src/artifact.ts) and laid out for a runtime that reads files: the lock,
// and each component's wasm as a file named by its digest in one directory. Files are written
// aside and renamed, so a reader never sees half of one, and reused when already there: the same
// build deployed twice, or two applications of the same bytes, share one file.
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { PullLimits } from './artifact.js'
import { pullSpinApp } from './artifact.js'
import type { LockedApp } from './format.js'
import { parseRef } from './ref.js'
import type { StoreOptions } from './store.js'
import { openStore } from './store.js'

export type UnpackedSpinApp = {
  /** The manifest's digest. */
  digest: string
  lockedApp: LockedApp
  /** Each component's wasm file, by component id. */
  components: Record<string, string>
}

/** The wasm file of `digest` (sha256:hex) in `dir`. */
function wasmPath(dir: string, digest: string): string {
  return join(dir, `${digest.replace(/^sha256:/, '')}.wasm`)
}

/** Pull `image` and write its components' wasm into `dir`. */
export async function unpackSpinApp(
  image: string,
  dir: string,
  options: StoreOptions,
  limits?: PullLimits,
): Promise<UnpackedSpinApp> {
  const ref = parseRef(image)
  const store = await openStore(ref, options)
  // parseRef gives every reference a tag or a digest.
  const app = await pullSpinApp(store, ref.digest ?? ref.tag ?? 'latest', limits)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const components: Record<string, string> = {}
  for (const component of app.lockedApp.components) {
    // pullSpinApp checked every component names a wasm layer it fetched.
    const digest = component.source.digest as string
    const path = wasmPath(dir, digest)
    if (!existsSync(path)) {
      const aside = `${path}.${process.pid}.tmp`
      writeFileSync(aside, app.wasm.get(digest) as Buffer, { mode: 0o600 })
      renameSync(aside, path)
    }
    components[component.id] = path
  }
  return { digest: app.digest, lockedApp: app.lockedApp, components }
}
