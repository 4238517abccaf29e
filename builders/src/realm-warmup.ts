// Spin's variables interface, as componentize-js binds it, runs `get` in a JS realm of its own
// whose built-ins (Uint8Array, String, an error's stack) SpiderMonkey makes on first use. A
// function's component starts every request from the snapshot its build takes after running
// the module's top level, so what nothing used by then was made again on every request: about
// a third of the js template's CPU per request (issue 43, bench/RESULTS.md). A bundle that
// imports the interface gets one line at its top level that uses them in that realm, so the
// snapshot holds them; the function's own code is not changed.
import type { Metafile } from 'esbuild'

export const VARIABLES_INTERFACE = 'fermyon:spin/variables@2.0.0'

/** Appended to the bundle: an import (hoisted, as every import is) and one call at its top level. */
export const REALM_WARMUP = [
  '',
  `import { get as __platformVariablesGet } from '${VARIABLES_INTERFACE}';`,
  "__platformVariablesGet.constructor('new Uint8Array(0); String(0); new Error().stack')();",
  '',
].join('\n')

/** What to append to a bundle with this metafile: the warm-up when it imports the interface. */
export function realmWarmup(metafile: Metafile | undefined): string {
  const imports = Object.values(metafile?.inputs ?? {}).flatMap((input) => input.imports)
  return imports.some((entry) => entry.external === true && entry.path === VARIABLES_INTERFACE) ? REALM_WARMUP : ''
}
