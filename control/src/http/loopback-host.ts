// With authentication off the API is whoever reaches the port, and a page in any browser on
// the machine can reach loopback by DNS rebinding: its own name (evil.example) made to resolve
// to 127.0.0.1, so the browser sends `Host: evil.example` there and treats the answers as the
// page's own. Answering only Host values that name loopback (or the operator's own names)
// closes that: a rebinding page cannot make the browser send a name it does not own.
// With authentication on no check is made: a rebound page holds no bearer token (the browser
// adds none by itself), so it gets 401 like any other caller, and behind ingresses and
// proxies the Host is whatever they were given.
import { isIP } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { InvalidInputError } from '@session-relay/common/errors'

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]'])

export type HostRule = {
  /** The --public-base-url's host, lowercased (its `*` first label stands for one label); null: none. */
  publicHost: string | null
  /** --dev-insecure-listen-anywhere: any IP literal too (the machine's own addresses; a rebinding page has only names). */
  ipLiterals: boolean
}

/** The host part of a `Host` header (lowercased), or null when it is no `host[:port]` at all. */
function hostOf(header: string): string | null {
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::([0-9]{1,5}))?$/.exec(header.toLowerCase())
  if (match === null) return null
  const port = match[2]
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return null
  return match[1] as string
}

function matchesPublic(host: string, publicHost: string): boolean {
  if (!publicHost.startsWith('*.')) return host === publicHost
  const suffix = publicHost.slice(1)
  const label = host.slice(0, host.length - suffix.length)
  return host.endsWith(suffix) && /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(label)
}

/**
 * Whether a request with this `Host` header may be answered with authentication off. None at
 * all (HTTP/1.0) is: every browser sends one, and any other local process reaches the port anyway.
 */
export function hostAllowed(header: string | undefined, rule: HostRule): boolean {
  if (header === undefined) return true
  const host = hostOf(header)
  if (host === null) return false
  if (LOOPBACK_NAMES.has(host)) return true
  if (rule.publicHost !== null && matchesPublic(host, rule.publicHost)) return true
  return rule.ipLiterals && isIP(host.replace(/^\[(.*)\]$/, '$1')) !== 0
}

/** The rule for these settings: the public base URL's host, lowercased (URL does that). */
export function hostRule(publicBaseUrl: string, listenAnywhere: boolean): HostRule {
  // URL turns "*" into "%2A"; the base URL's parser allowed it only as the first label.
  const publicHost = publicBaseUrl === '' ? null : new URL(publicBaseUrl).hostname.replace(/^%2a\./i, '*.')
  return { publicHost, ipLiterals: listenAnywhere }
}

/** Refuses, before anything else runs, every request whose Host is not allowed: 400 through the one error handler. */
export function requireLoopbackHost(app: FastifyInstance, rule: HostRule): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const header = request.headers.host
    if (hostAllowed(header, rule)) {
      done()
      return
    }
    done(
      new InvalidInputError(
        `Host ${JSON.stringify(header ?? '')} is not answered: with authentication off (--dev-insecure-skip-auth) only localhost, 127.0.0.1, [::1]${rule.publicHost === null ? '' : ` and ${rule.publicHost}`}${rule.ipLiterals ? ' and IP addresses' : ''} are, so that a web page cannot reach the API by DNS rebinding`,
      ),
    )
  })
}
