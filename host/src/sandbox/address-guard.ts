// Every name a function's outgoing request resolves is checked where the connection is made:
// preview2-shim makes outgoing requests in its I/O worker thread, with Node's http agents, so
// this module wraps `dns.lookup` there and refuses a name whose addresses include one the
// address policy refuses. Checking there, not before the request, leaves no window for a name
// that resolves to a public address when checked and to loopback when connected (DNS
// rebinding). An address written as one is passed through: a connection to it is never looked
// up (the outgoing handler, imports.ts, checks it), and the shim's own loopback server looks up
// the address it listens on.
//
// Imported in the main thread before preview2-shim (spin-app.ts imports it first): it puts
// itself in NODE_OPTIONS, which the shim's worker, started when the shim loads, reads as it
// starts (its execArgv is empty, NODE_OPTIONS still applies). In the worker it installs the
// wrapper with the ranges the operator allowed (ALLOWED_RANGES_ENV, set before the shim loads).
import dns from 'node:dns'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { LookupAddress, LookupAllOptions, LookupOptions } from 'node:dns'
import { isIP } from 'node:net'
import { isMainThread } from 'node:worker_threads'
import { ALLOWED_RANGES_ENV, addressPolicy, parseRanges } from './addresses.js'

type Callback = (error: NodeJS.ErrnoException | null, address?: string | LookupAddress[], family?: number) => void

// The worker starts without the main thread's loaders: run from the sources (the tests), it
// loads the compiled copy that `npm run build` puts under dist/.
function compiledSelf (): string {
  if (!import.meta.url.endsWith('.ts')) return import.meta.url
  const compiled = new URL('../../../host/dist/sandbox/address-guard.js', import.meta.url)
  if (!existsSync(compiled)) throw new Error(`${fileURLToPath(compiled)} is missing: run npm run build (the address guard runs compiled in preview2-shim's worker)`)
  return compiled.href
}

function refusal (hostname: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`outbound request to ${hostname} refused: it resolves to an address functions may not reach`)
  // What the shim turns into a DNS error for the function, as a name that does not resolve.
  error.code = 'ENOTFOUND'
  return error
}

function installGuard (): void {
  const policy = addressPolicy(parseRanges(process.env[ALLOWED_RANGES_ENV] ?? ''))
  const unguarded = dns.lookup.bind(dns) as (...args: unknown[]) => void
  const original = unguarded as (hostname: string, options: LookupAllOptions, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void
  const guarded = (hostname: string, options: LookupOptions | number | Callback, maybeCallback?: Callback): void => {
    const callback = (typeof options === 'function' ? options : maybeCallback) as Callback
    if (isIP(hostname) !== 0) return unguarded(...[hostname, options, maybeCallback].filter((argument) => argument !== undefined))
    const given: LookupOptions = typeof options === 'number' ? { family: options } : typeof options === 'object' ? options : {}
    original(hostname, { ...given, all: true }, (error, addresses) => {
      if (error !== null) return callback(error)
      if (addresses.length === 0 || addresses.some((entry) => policy.refused(entry.address))) return callback(refusal(hostname))
      if ((given as LookupAllOptions).all === true) return callback(null, addresses)
      const first = addresses[0] as LookupAddress
      callback(null, first.address, first.family)
    })
  }
  // The agents' sockets read dns.lookup when they connect.
  ;(dns as { lookup: unknown }).lookup = guarded
}

if (isMainThread) {
  const flag = `--import=${compiledSelf()}`
  const current = process.env.NODE_OPTIONS ?? ''
  if (!current.split(/\s+/).includes(flag)) process.env.NODE_OPTIONS = `${current} ${flag}`.trim()
} else {
  installGuard()
}
