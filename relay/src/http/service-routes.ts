// The routes around the relay's two APIs: discovery, health, metrics, and 404 for the rest.
import type { Authenticator } from '../auth.js'
import type { RelayConfig } from '../config.js'
import { HttpError } from '../errors.js'
import type { SessionTable } from '../session/table.js'
import { preflight } from './cors.js'
import { discoveryHandler } from './discovery.js'
import type { Metrics } from './metrics.js'
import { renderMetrics } from './metrics.js'
import type { OriginPolicy } from './origins.js'
import type { Readiness } from './readiness.js'
import { readyzHandler } from './readiness.js'
import type { Routes } from './request-guard.js'
import { methodNotAllowed, send, sendError } from './responses.js'
import type { HttpResponse } from './uws.js'

export type ServiceDeps = {
  config: Pick<RelayConfig, 'oidcIssuer' | 'oidcAudience' | 'oidcClientId'>
  auth: Authenticator | null
  allowsOrigin: OriginPolicy
  table: SessionTable
  metrics: Metrics
  readiness: Readiness
}

/** Registered last: the 404 catches every path nothing before it took. */
export function registerServiceRoutes(
  routes: Routes,
  { config, auth, allowsOrigin, table, metrics, readiness }: ServiceDeps,
): void {
  routes.get(
    '/.well-known/relay-config',
    discoveryHandler({
      auth,
      issuer: config.oidcIssuer,
      audience: config.oidcAudience,
      clientId: config.oidcClientId,
      allowsOrigin,
    }),
  )
  routes.options('/.well-known/relay-config', preflight(allowsOrigin))
  routes.any('/.well-known/relay-config', methodNotAllowed('GET'))

  routes.get('/healthz', (res: HttpResponse) => send(res, 200, 'ok', { 'content-type': 'text/plain; charset=utf-8' }))
  routes.any('/healthz', methodNotAllowed('GET'))
  routes.get('/readyz', readyzHandler(readiness))
  routes.any('/readyz', methodNotAllowed('GET'))

  routes.get('/metrics', (res: HttpResponse) => {
    const text = renderMetrics(metrics, {
      sessionsByState: table.countByState(),
      backlogBytes: table.backlog.total,
      connections: table.connections(),
      rateHeld: table.countRateHeld(),
    })
    send(res, 200, text, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' })
  })
  routes.any('/metrics', methodNotAllowed('GET'))

  routes.any('/*', (res: HttpResponse) => sendError(res, new HttpError(404, 'not found')))
}
