// Go for go builds on a machine without one: the toolchain module `go` itself downloads for
// GOTOOLCHAIN (golang.org/toolchain@v0.0.1-go{version}.linux-{arch}), from the Go module proxy,
// checked against a pinned sha256 as builders/Dockerfile.go checks it, and unpacked into the
// toolchains' directory. A Go of 1.21 or later already on PATH is used as it is.
import { existsSync, readFileSync, realpathSync, renameSync, rmSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { delimiter, dirname, join } from 'node:path'
import { unzipTo } from './unzip.js'

/** The Go a machine without one gets: the builder image's (builders/Dockerfile.go), per architecture. */
export const PINNED_GO: GoPin = {
  version: '1.26.8',
  sha256: {
    amd64: '30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7',
    arm64: '02b36b6787b3ac767668f630e2998df45a3b1f9ffee08d1bf3ef6487cd658d99',
  },
}

export type GoPin = { version: string; sha256: Partial<Record<GoArch, string>> }
type GoArch = 'amd64' | 'arm64'

/** This machine's architecture as Go names it, or null when no Go is pinned for it. */
export function goArch(arch: string = process.arch): GoArch | null {
  return arch === 'x64' ? 'amd64' : arch === 'arm64' ? 'arm64' : null
}

/** Whether the `go` first on `path` is Go 1.21 or later (wasip1), by its root's VERSION file. */
export function suitableGoOnPath(path: string): boolean {
  for (const dir of path.split(delimiter)) {
    if (dir === '' || !existsSync(join(dir, 'go'))) continue
    try {
      const version = readFileSync(join(dirname(dirname(realpathSync(join(dir, 'go')))), 'VERSION'), 'utf8')
      const [major, minor] = (/^go(\d+)\.(\d+)/.exec(version) ?? []).slice(1).map(Number)
      if (major === undefined || minor === undefined) return true // a development build: trusted
      return major > 1 || minor >= 21
    } catch {
      // Distributions that move the root keep no VERSION there; the build will tell.
      return true
    }
  }
  return false
}

/** Where the fetched Go's bin/ is (whether or not it is there yet). */
export function fetchedGoBin(dir: string, version: string): string {
  return join(dir, 'go', `go${version}`, 'bin')
}

export type GoFetch = {
  /** The Go module proxy's base URL (https://proxy.golang.org). */
  proxy: string
  /** The toolchains' directory: the Go goes to {dir}/go/go{version}. */
  dir: string
  pin: GoPin
  arch: GoArch
  progress: (line: string) => void
  signal: AbortSignal
}

/**
 * Downloads, checks and unpacks the pinned Go; resolves with its bin/. The archive is held in
 * memory and unpacked beside its final place, then renamed: a refused checksum or an abort
 * leaves nothing behind, and the next build starts over.
 */
export async function fetchGo(options: GoFetch): Promise<string> {
  const { pin, arch, progress } = options
  const expected = pin.sha256[arch]
  if (expected === undefined) throw new Error(`no Go is pinned for linux-${arch}`)
  const module = `v0.0.1-go${pin.version}.linux-${arch}`
  const url = `${options.proxy.replace(/\/+$/, '')}/golang.org/toolchain/@v/${module}.zip`
  const started = Date.now()
  progress(`fetching Go ${pin.version} from ${url}`)
  const response = await fetch(url, { signal: options.signal })
  if (!response.ok || response.body === null)
    throw new Error(`fetching Go ${pin.version}: ${url} answered ${response.status}`)
  const total = Number(response.headers.get('content-length') ?? 0)
  const hash = createHash('sha256')
  const chunks: Buffer[] = []
  let received = 0
  let quarter = 0
  for await (const chunk of response.body) {
    const bytes = Buffer.from(chunk as Uint8Array)
    hash.update(bytes)
    chunks.push(bytes)
    received += bytes.length
    // A line per quarter: enough to see it move without filling the build's log.
    while (total > 0 && quarter < 3 && received >= ((quarter + 1) * total) / 4) {
      quarter++
      progress(`fetching Go ${pin.version}: ${mib(received)} of ${mib(total)} MiB`)
    }
  }
  const actual = hash.digest('hex')
  if (actual !== expected)
    throw new Error(`fetching Go ${pin.version}: ${url} has sha256 ${actual}, not the pinned ${expected}; nothing kept`)
  progress(`fetched ${mib(received)} MiB, sha256 checked, in ${seconds(started)} s; unpacking`)
  const bin = fetchedGoBin(options.dir, pin.version)
  const root = dirname(bin)
  const partial = `${root}.partial`
  rmSync(partial, { recursive: true, force: true })
  try {
    const files = unzipTo(Buffer.concat(chunks), `golang.org/toolchain@${module}/`, partial)
    if (!existsSync(join(partial, 'bin', 'go'))) throw new Error(`the archive at ${url} holds no bin/go`)
    rmSync(root, { recursive: true, force: true })
    renameSync(partial, root)
    progress(`Go ${pin.version} ready at ${root} (${files} files, ${seconds(started)} s in all)`)
  } catch (error) {
    rmSync(partial, { recursive: true, force: true })
    throw error
  }
  return bin
}

const mib = (bytes: number): string => (bytes / 1048576).toFixed(1)
const seconds = (since: number): string => ((Date.now() - since) / 1000).toFixed(1)
