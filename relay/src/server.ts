import { accessSync, constants } from 'node:fs'
import type * as Uws from 'uWebSockets.js'
import { createAddressLimiter, unlimited } from './http/admission.js'
import type { AddressLimiter, RateLimit } from './http/admission.js'
import { methodNotAllowed, preflight, registerAdminRoutes } from './admin/routes.js'
import type { Authenticator, AuthOptions } from './auth.js'
import { createAuthenticator } from './auth.js'
import type { RelayConfig } from './config.js'
import { dataPlaneBehavior } from './data-plane/behavior.js'
import { CLOSE_CODES } from './data-plane/close-codes.js'
import { discoveryHandler } from './http/discovery.js'
import { ConfigError, HttpError, ListenError } from './errors.js'
import { createForwarder } from './data-plane/forwarding.js'
import { send, sendError } from './http/responses.js'
import { whyCannotListen } from './http/listen-failure.js'
import type { Logger } from './logger.js'
import { createMetrics, renderMetrics } from './http/metrics.js'
import { compileOriginPolicy } from './http/origins.js'
import { guardedRoutes } from './http/request-guard.js'
import type { PeerData } from './session/session.js'
import { createSessionTable } from './session/table.js'
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from './http/uws.js'
import { loadUws } from './http/uws.js'

export type RelayServer = {
  /** The port it listens on (the one the OS picked when the address asked for port 0). */
  port: number
  /** Entries in the session table, closed ones awaiting the sweep included. */
  sessionCount (): number
  /** Bytes waiting to reach peers across the process, as the backlog limits count them. */
  backlogBytes (): number
  /** Stop accepting, close every peer with the shutdown close code, and release the port. */
  shutdown (): Promise<void>
}

export type RelayDeps = {
  logger: Logger
  uws?: typeof Uws
  /** Tuning for the identity-provider client (timeouts, refresh cooldown); tests shorten them. */
  auth?: Partial<Pick<AuthOptions, 'fetchTimeoutMs' | 'refreshCooldownMs' | 'retryMs' | 'now'>>
}

/** How long shutdown waits for peers to acknowledge their close frames. */
const SHUTDOWN_GRACE_MS = 2_000

export async function startRelay (config: RelayConfig, deps: RelayDeps): Promise<RelayServer> {
  const { logger } = deps
  const uws = deps.uws ?? loadUws()
  const app = createApp(uws, config)
  const metrics = createMetrics()
  // Behind a TLS-terminating proxy the relay serves http but its pages are https: the public
  // base URL says so. X-Forwarded-Proto is not read, since the relay trusts no proxy headers.
  const ownScheme = config.tlsCert !== '' || /^wss:/i.test(config.publicBaseUrl) ? 'https' : 'http'
  const allowsOrigin = compileOriginPolicy(config.allowedOrigins, ownScheme)

  let auth: Authenticator | null = null
  if (config.noAuth) {
    logger.warn('auth is disabled (--no-auth): anyone who can reach the admin API can create, read and delete sessions; never run this in production')
  } else {
    auth = createAuthenticator({
      issuer: config.oidcIssuer,
      audience: config.oidcAudience,
      logger,
      minRefreshMs: config.jwksMinRefreshMs,
      maxRefreshMs: config.jwksMaxRefreshMs,
      ...deps.auth,
    })
    if (config.oidcAudience === '') logger.warn('no --oidc-audience: tokens issued for any audience are accepted')
  }

  const table = createSessionTable({
    ttlMs: config.sessionTtlMs,
    peerWaitMs: config.peerWaitMs,
    reapIntervalMs: config.reapIntervalMs,
    logger,
    metrics,
  })
  const forwarder = createForwarder(table, {
    maxBacklog: config.maxBacklog,
    maxTotalBacklog: config.maxTotalBacklog,
    metrics,
  })

  const limiter = (limit: RateLimit | null): AddressLimiter =>
    limit === null ? unlimited : createAddressLimiter(limit, config.limitAddresses)

  let openSockets = 0
  const behavior = dataPlaneBehavior({
    table,
    forwarder,
    metrics,
    logger,
    allowsOrigin,
    maxFrameSize: config.maxFrameSize,
    maxBacklog: config.maxBacklog,
    attachFailures: limiter(config.attachFailureLimit),
  })
  const { open, close } = behavior
  // Every route behind the checks uWS leaves to the application (request-guard.ts).
  const routes = guardedRoutes(app)
  routes.ws<PeerData>('/relay/:id', {
    ...behavior,
    open (ws) { openSockets++; open?.(ws) },
    close (ws, code, message) { openSockets--; close?.(ws, code, message) },
  })
  routes.any('/relay/:id', (res: HttpResponse, req: HttpRequest) => {
    // uWS passes upgrades without a Sec-WebSocket-Key here rather than to the ws route.
    if (req.getHeader('upgrade') !== '') {
      metrics.attachRefused.bad_request++
      return sendError(res, new HttpError(400, 'invalid websocket upgrade request'))
    }
    sendError(res, new HttpError(426, 'websocket upgrade required', { upgrade: 'websocket', connection: 'Upgrade' }))
  })

  registerAdminRoutes(routes, {
    table,
    auth,
    allowsOrigin,
    publicBaseUrl: config.publicBaseUrl,
    logger,
    metrics,
    authFailures: limiter(config.adminAuthFailureLimit),
    creates: limiter(config.sessionCreateLimit),
    maxSessions: config.maxSessions,
    fullRetryAfterSeconds: Math.ceil(config.reapIntervalMs / 1000),
  })

  routes.get('/.well-known/relay-config', discoveryHandler({
    auth, issuer: config.oidcIssuer, audience: config.oidcAudience, clientId: config.oidcClientId, allowsOrigin,
  }))
  routes.options('/.well-known/relay-config', preflight(allowsOrigin))
  routes.any('/.well-known/relay-config', methodNotAllowed('GET'))

  routes.get('/healthz', (res: HttpResponse) => send(res, 200, 'ok', { 'content-type': 'text/plain; charset=utf-8' }))
  routes.any('/healthz', methodNotAllowed('GET'))

  routes.get('/metrics', (res: HttpResponse) => {
    const text = renderMetrics(metrics, {
      sessionsByState: table.countByState(),
      backlogBytes: table.backlog.total,
      connections: table.connections(),
    })
    send(res, 200, text, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' })
  })
  routes.any('/metrics', methodNotAllowed('GET'))

  routes.any('/*', (res: HttpResponse) => sendError(res, new HttpError(404, 'not found')))

  const listenSocket = await listen(uws, app, config.addr.host, config.addr.port)
  const port = uws.us_socket_local_port(listenSocket)
  logger.info({ host: config.addr.host || '*', port, tls: config.tlsCert !== '' }, 'relay listening')

  let stopping: Promise<void> | null = null
  function shutdown (): Promise<void> {
    stopping ??= (async () => {
      uws.us_listen_socket_close(listenSocket)
      table.closeAll('shutdown', CLOSE_CODES.shutdown)
      auth?.close()
      const deadline = Date.now() + SHUTDOWN_GRACE_MS
      while (openSockets > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
      ;(app as TemplatedApp & { close (): void }).close()
      logger.info('relay stopped')
    })()
    return stopping
  }

  return { port, sessionCount: table.size, backlogBytes: () => table.backlog.total, shutdown }
}

function createApp (uws: typeof Uws, config: RelayConfig): TemplatedApp {
  if (config.tlsCert === '') return uws.App()
  for (const [flag, file] of [['--tls-cert', config.tlsCert], ['--tls-key', config.tlsKey]] as const) {
    try {
      accessSync(file, constants.R_OK)
    } catch {
      throw new ConfigError(`cannot read ${flag} file ${file}`)
    }
  }
  try {
    return uws.SSLApp({ cert_file_name: config.tlsCert, key_file_name: config.tlsKey })
  } catch {
    // uWS only says "App construction failed": the files are readable but not a PEM pair.
    throw new ConfigError(`--tls-cert ${config.tlsCert} and --tls-key ${config.tlsKey} are not a valid PEM certificate and key`)
  }
}

/** uWS 20.30 takes (host, port, options, handler); its typings declare neither that form nor the options' values. */
type ListenWithHost = {
  listen (host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void): void
  listen (port: number, options: number, cb: (socket: us_listen_socket | false) => void): void
}

function listen (uws: typeof Uws, app: TemplatedApp, host: string, port: number): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    const done = (socket: us_listen_socket | false): void => {
      if (socket === false) {
        void whyCannotListen(host, port).then((why) => reject(new ListenError(`cannot listen on ${host || '*'}:${port}: ${why}`)))
      } else resolve(socket)
    }
    // uWS binds with SO_REUSEPORT unless told otherwise: a second relay on the same port
    // would start and take half the connections, whose sessions live in the other process.
    const exclusive = (uws as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT: number }).LIBUS_LISTEN_EXCLUSIVE_PORT
    // An empty host listens on every interface, IPv4 and IPv6.
    if (host === '') (app as unknown as ListenWithHost).listen(port, exclusive, done)
    else (app as unknown as ListenWithHost).listen(host, port, exclusive, done)
  })
}
