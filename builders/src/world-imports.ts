// What a js/ts function may import from the WIT worlds its package.json names: everything but
// the interfaces the runtime gives no function (files, the environment, sockets). The js
// runtime inside every component imports wasi:filesystem and wasi:cli/environment itself, and
// the runtime answers those with no directories and no variables; a function that imports
// them in its own code means to read the machine, so its build is refused, naming the import.
// Variables (fermyon:spin/variables) and outgoing HTTP to allowed_outbound_hosts (fetch) are
// the ways in and out.
const REFUSED = [
  { pattern: /^wasi:filesystem\//, what: 'files' },
  { pattern: /^wasi:cli\/environment\b/, what: 'environment' },
  { pattern: /^wasi:sockets\//, what: 'sockets' },
]

/** Why `specifier` (an import left external by the bundle) is refused, or null. */
export function refusedImport(specifier: string): string | null {
  const refused = REFUSED.find(({ pattern }) => pattern.test(specifier))
  if (refused === undefined) return null
  return `imports ${specifier}, but functions get no ${refused.what} here: read settings with fermyon:spin/variables, reach other services with fetch to allowed_outbound_hosts`
}

/** Where `specifier` is written in `source`, 1-based, for the error line; the file's start when not found. */
export function importLocation(source: string, specifier: string): { line: number; column: number } {
  const lines = source.split('\n')
  for (let index = 0; index < lines.length; index++) {
    const column = (lines[index] as string).indexOf(specifier)
    if (column !== -1) return { line: index + 1, column: column + 1 }
  }
  return { line: 1, column: 1 }
}
