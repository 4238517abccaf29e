// Why uWebSockets.js did not load, in one line an operator can act on. The mirror ships one
// binary per platform and Node ABI, each linked against some glibc; loading one that needs a
// newer glibc than the host's is the common failure (Node 24's binary on Debian 12), and the
// dynamic linker's message names a symbol, not the fix.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

export type Runtime = {
  node: string // process.version
  abi: string // process.versions.modules
  platform: string
  arch: string
  glibc: string | undefined // the host's, when Linux with glibc
}

export const IMAGE_HINT = 'run the relay image (Node 24 on Debian 13, docs/operations.md) or Node 22 on this host'

export function currentRuntime(): Runtime {
  const header = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header ?? {}
  return {
    node: process.version,
    abi: process.versions.modules,
    platform: process.platform,
    arch: process.arch,
    glibc: header.glibcVersionRuntime,
  }
}

/** The binary the mirror's loader picks for this runtime. */
export function binaryPath(runtime: Runtime): string {
  const require = createRequire(import.meta.url)
  const dir = dirname(require.resolve('uWebSockets.js'))
  return join(dir, `uws_${runtime.platform}_${runtime.arch}_${runtime.abi}.node`)
}

/** The newest GLIBC_2.x version the binary asks for, read from its version-needed strings; undefined when it names none. */
export function glibcNeeded(bytes: Buffer): string | undefined {
  let newest: number | undefined
  for (const match of bytes.toString('latin1').matchAll(/GLIBC_2\.(\d+)/g)) {
    const minor = Number(match[1])
    if (newest === undefined || minor > newest) newest = minor
  }
  return newest === undefined ? undefined : `2.${newest}`
}

export function describeLoadFailure(runtime: Runtime, binary: Buffer | undefined): string {
  const where = `Node ${runtime.node} (ABI ${runtime.abi}, ${runtime.platform}-${runtime.arch})`
  if (binary === undefined) {
    return `uWebSockets.js has no native binary for ${where}; supported: Node 22 and 24 on Linux x64/arm64 with glibc; ${IMAGE_HINT}`
  }
  const needed = glibcNeeded(binary)
  const host = runtime.glibc === undefined ? 'no glibc (musl?)' : `glibc ${runtime.glibc}`
  if (needed !== undefined && (runtime.glibc === undefined || newer(needed, runtime.glibc))) {
    return `uWebSockets.js for ${where} needs glibc ${needed}, this host has ${host}; ${IMAGE_HINT}`
  }
  return `uWebSockets.js native binary did not load for ${where} on ${host}; ${IMAGE_HINT}`
}

/** Reads the binary the loader wanted, or undefined when the mirror has none for this runtime. */
export function readBinary(runtime: Runtime): Buffer | undefined {
  try {
    return readFileSync(binaryPath(runtime))
  } catch {
    return undefined
  }
}

function newer(a: string, b: string): boolean {
  const [aMajor = 0, aMinor = 0] = a.split('.').map(Number)
  const [bMajor = 0, bMinor = 0] = b.split('.').map(Number)
  return aMajor !== bMajor ? aMajor > bMajor : aMinor > bMinor
}
