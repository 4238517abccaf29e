// The composition root: builds every piece from the settings and wires them to the routes.
// The pieces are in the folders (see README.md); nothing here handles a request itself.
import type * as Uws from 'uWebSockets.js'
import { registerAdminRoutes } from './admin/routes.js'
import type { AuthTuning } from './auth.js'
import { authenticatorFor } from './auth.js'
import type { RelayConfig } from './config.js'
import { CLOSE_CODES } from './data-plane/close-codes.js'
import { createForwarder } from './data-plane/forwarding.js'
import { registerDataPlaneRoute } from './data-plane/route.js'
import { createAddressLimiter, unlimited } from './http/admission.js'
import type { AddressLimiter, RateLimit } from './http/admission.js'
import { createApp, listen } from './http/app.js'
import { createMetrics } from './http/metrics.js'
import { compileOriginPolicy } from './http/origins.js'
import { guardedRoutes } from './http/request-guard.js'
import type { Readiness } from './http/readiness.js'
import { registerServiceRoutes } from './http/service-routes.js'
import type { TemplatedApp } from './http/uws.js'
import { loadUws } from './http/uws.js'
import type { Logger } from './logger.js'
import type { RelayTracing } from './tracing/hooks.js'
import { createSessionTable } from './session/table.js'

export type RelayServer = {
  /** The port it listens on (the one the OS picked when the address asked for port 0). */
  port: number
  /** Entries in the session table, closed ones awaiting the sweep included. */
  sessionCount(): number
  /** Bytes waiting to reach peers across the process, as the backlog limits count them. */
  backlogBytes(): number
  /** Stop accepting, close every peer with the shutdown close code, and release the port. */
  shutdown(): Promise<void>
  /**
   * Not ready and no new sessions, the held ones served until none is left or until
   * --drain-timeout, then shutdown(). A shutdown() meanwhile ends it at once.
   */
  drain(): Promise<void>
}

export type RelayDeps = {
  logger: Logger
  uws?: typeof Uws
  /** Tuning for the identity-provider client (timeouts, refresh cooldown); tests shorten them. */
  auth?: AuthTuning
  /** Spans for the admin API and sessions (tracing/sdk.ts); absent or null: tracing off. */
  tracing?: RelayTracing | null
}

/** How long shutdown waits for peers to acknowledge their close frames. */
const SHUTDOWN_GRACE_MS = 2_000
/** How often a drain looks whether any session is left: the delay it adds to an exit, at most. */
const DRAIN_POLL_MS = 100

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export async function startRelay(config: RelayConfig, deps: RelayDeps): Promise<RelayServer> {
  const { logger } = deps
  const uws = deps.uws ?? loadUws(config.maxHeadersSize)
  const app = createApp(uws, config)
  const metrics = createMetrics()
  // Behind a TLS-terminating proxy the relay serves http but its pages are https: the public
  // base URL says so. X-Forwarded-Proto is not read, since the relay trusts no proxy headers.
  const ownScheme = config.tlsCert !== '' || /^wss:/i.test(config.publicBaseUrl) ? 'https' : 'http'
  const allowsOrigin = compileOriginPolicy(config.allowedOrigins, ownScheme)
  const auth = authenticatorFor(config, logger, deps.auth)
  const readiness: Readiness = { draining: false }
  const tracing = deps.tracing ?? null

  const table = createSessionTable({
    ttlMs: config.sessionTtlMs,
    peerWaitMs: config.peerWaitMs,
    reapIntervalMs: config.reapIntervalMs,
    logger,
    metrics,
    tracing: tracing?.sessions ?? null,
  })
  const forwarder = createForwarder(table, {
    maxBacklog: config.maxBacklog,
    maxTotalBacklog: config.maxTotalBacklog,
    metrics,
  })
  const limiter = (limit: RateLimit | null): AddressLimiter =>
    limit === null ? unlimited : createAddressLimiter(limit, config.limitAddresses)

  // Every route behind the checks uWS leaves to the application (http/request-guard.ts).
  const routes = guardedRoutes(app)
  const dataPlane = registerDataPlaneRoute(routes, {
    table,
    forwarder,
    metrics,
    logger,
    allowsOrigin,
    maxFrameSize: config.maxFrameSize,
    maxBacklog: config.maxBacklog,
    attachFailures: limiter(config.attachFailureLimit),
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
    readiness,
    maxSessionsPerCaller: config.maxSessionsPerCaller,
    callerClaim: config.callerClaim,
    tracing,
    limits: {
      defaultMaxBytes: config.defaultSessionBytes,
      maxMaxBytes: config.maxSessionBytes,
      defaultRate: config.defaultSessionRate,
      maxRate: config.maxSessionRate,
      ttlMs: config.sessionTtlMs,
    },
  })
  registerServiceRoutes(routes, { config, auth, allowsOrigin, table, metrics, readiness })

  const listenSocket = await listen(uws, app, config.addr.host, config.addr.port)
  const port = uws.us_socket_local_port(listenSocket)
  logger.info({ host: config.addr.host || '*', port, tls: config.tlsCert !== '' }, 'relay listening')

  let stopping: Promise<void> | null = null
  function shutdown(): Promise<void> {
    stopping ??= (async () => {
      uws.us_listen_socket_close(listenSocket)
      table.closeAll('shutdown', CLOSE_CODES.shutdown)
      auth?.close()
      const deadline = Date.now() + SHUTDOWN_GRACE_MS
      while (dataPlane.openSockets() > 0 && Date.now() < deadline) await pause(20)
      ;(app as TemplatedApp & { close(): void }).close()
      logger.info('relay stopped')
    })()
    return stopping
  }

  let draining: Promise<void> | null = null
  function drain(): Promise<void> {
    draining ??= (async () => {
      readiness.draining = true
      logger.info({ sessions: table.unfinished(), timeout_ms: config.drainTimeoutMs }, 'draining')
      const deadline = Date.now() + config.drainTimeoutMs
      const busy = (): boolean => table.unfinished() > 0 || dataPlane.openSockets() > 0
      while (stopping === null && busy() && Date.now() < deadline) await pause(DRAIN_POLL_MS)
      if (stopping === null) {
        if (busy()) logger.info({ sessions: table.unfinished() }, 'drain timed out')
        else logger.info('drained')
      }
      await shutdown()
    })()
    return draining
  }

  return { port, sessionCount: table.size, backlogBytes: () => table.backlog.total, shutdown, drain }
}
