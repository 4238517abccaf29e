// The control plane assembled: database (opened and migrated), authentication, the HTTP app,
// and the listening socket; and the reverse on close.
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import type { AuthOptions, Authenticator } from './auth.js'
import { createAuthenticator } from './auth.js'
import type { ControlConfig } from './config.js'
import type { Database } from './db.js'
import { openDatabase } from './db.js'
import type { Logger } from './logger.js'
import type { ControlMetrics } from './metrics.js'
import { createControlMetrics } from './metrics.js'
import { migrate } from './migrations.js'

export type ControlServer = {
  app: FastifyInstance
  db: Database
  /** The counters /metrics serves; `recordBuildFinished` is for whatever sees builds end. */
  metrics: ControlMetrics
  /** The port it listens on (the one the OS picked when the address asked for port 0). */
  port: number
  /** Stop accepting, finish requests in flight, close the database. */
  close (): Promise<void>
}

export type ServerDeps = {
  logger: Logger
  /** Tuning for the identity-provider client (timeouts, refresh cooldown); tests shorten them. */
  auth?: Pick<AuthOptions, 'fetchTimeoutMs' | 'refreshCooldownMs' | 'retryMs'>
}

export async function startControlPlane (config: ControlConfig, deps: ServerDeps): Promise<ControlServer> {
  const { logger } = deps
  const db = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, logger })
  let auth: Authenticator | null = null
  try {
    const applied = await migrate(db)
    logger.info({ engine: db.engine, ...(db.engine === 'pglite' ? { dataDir: config.dataDir } : {}), applied }, 'database ready')
    auth = authenticatorFor(config, deps)
    const metrics = createControlMetrics()
    const app = await buildApp(config, { db, logger, auth, metrics })
    // An empty host means every interface.
    await app.listen({ host: config.addr.host === '' ? '0.0.0.0' : config.addr.host, port: config.addr.port })
    const { port } = app.server.address() as AddressInfo
    logger.info({ host: config.addr.host || '*', port }, 'control plane listening')
    const authenticator = auth
    return {
      app,
      db,
      metrics,
      port,
      async close () {
        await app.close()
        authenticator?.close()
        await db.close()
        logger.info('control plane stopped')
      },
    }
  } catch (error) {
    auth?.close()
    await db.close().catch(() => {})
    throw error
  }
}

function authenticatorFor (config: ControlConfig, deps: ServerDeps): Authenticator | null {
  const { logger } = deps
  if (config.devInsecureSkipAuth) {
    logger.warn('AUTHENTICATION IS OFF (PLATFORM_DEV_INSECURE_SKIP_AUTH): anyone who can reach this port can create, change and delete every application; never run this outside development')
    return null
  }
  if (config.oidcAudience === '') logger.warn('no --oidc-audience (PLATFORM_OIDC_AUDIENCE): id tokens issued to any client of the issuer are accepted')
  return createAuthenticator({
    issuer: config.oidcIssuer,
    audience: config.oidcAudience,
    requiredClaim: config.requiredClaim,
    logger,
    ...deps.auth,
  })
}
