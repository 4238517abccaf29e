// The control plane's HTTP application: Fastify with TypeBox validation, one error handler,
// the OpenAPI document, /healthz, and the /api/v1 routes behind authentication.
import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import Fastify from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { ClusterSettings } from '../cluster/settings.js'
import type { DomainSettings } from '../config.js'
import type { AuthSettings } from './auth-settings.js'
import type { HttpSettings } from './settings.js'
import { authorize } from '../domain/access.js'
import type { Logger } from '../logger.js'
import type { ControlMetrics } from '../metrics/control-metrics.js'
import { createControlMetrics } from '../metrics/control-metrics.js'
import { noRuntime } from '../runtime/none.js'
import type { Runtime } from '../runtime/runtime.js'
import type { RegistrySigner } from '../registry/signing-key.js'
import type { Database } from '../store/db.js'
import type { Authenticator } from './auth.js'
import { callerOf, requireToken } from './auth.js'
import { enforceBodyRate } from './body-rate.js'
import type { Draining } from './draining.js'
import { createDraining } from './draining.js'
import { consoleConfigRoute, registerConsole } from './console.js'
import { handleError, JSON_BODY_LIMIT } from './error-handler.js'
import { hostRule, requireLoopbackHost } from './loopback-host.js'
import { registerOpenApi } from './openapi.js'
import type { RouteDeps } from './route-deps.js'
import { applicationRoutes } from './routes/applications.js'
import { buildRoutes } from './routes/builds.js'
import { functionRoutes } from './routes/functions.js'
import { meRoutes } from './routes/me.js'
import { registryTokenRoutes } from './routes/registry-token.js'
import { metricsRoutes } from './routes/metrics.js'
import { runtimeRoutes } from './routes/runtime.js'
import { sourceRoutes } from './routes/sources.js'
import { traceRoutes } from './routes/traces.js'
import { errors } from './schemas/errors.js'
import type { DomainDeps } from '../domain/deps.js'
import { createReconciler } from '../domain/reconcile.js'
import { validatorCompiler } from './validation.js'

const API_PREFIX = '/api/v1'

export type ControlDeps = {
  db: Database
  logger: Logger
  /** null: authentication is off (PLATFORM_DEV_INSECURE_SKIP_AUTH). */
  auth: Authenticator | null
  /** The counters /metrics serves; a fresh set when absent. */
  metrics?: ControlMetrics
  /** Where builds and applications run; absent: none (the endpoints that need one answer 503). */
  runtime?: Runtime
  /** Brings an application's deployment to what should run (domain/reconcile.ts); one without timers over `runtime` when absent. */
  deployments?: DomainDeps['deployments']
  /** Set by whoever stops the process; a fresh one (never draining) when absent. */
  draining?: Draining
  /** The registry token key (--registry-token-key): GET /registry/token is served with it. */
  registrySigner?: RegistrySigner | null
  /** The clock registry credentials are checked by; Date.now when absent. */
  registryClock?: () => number
  /** Without Prometheus: the series the metrics endpoints answer from (route-deps.ts). */
  embeddedMetrics?: RouteDeps['embeddedMetrics']
  /** The last traces kept in memory (tracing/store.ts); absent: none kept. */
  traces?: RouteDeps['traces']
}

/** The server's own settings, its callers', what the routes hand the domain, and where applications answer (the Host check). */
type AppSettings = HttpSettings & AuthSettings & DomainSettings & Pick<ClusterSettings, 'publicBaseUrl'>

export async function buildApp(config: AppSettings, deps: ControlDeps): Promise<FastifyInstance> {
  // Typed as Fastify's base logger so the instance's logger type parameter is the default one.
  const logger: FastifyBaseLogger = deps.logger
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: JSON_BODY_LIMIT,
    // Unique across restarts and replicas, so a request id in a bug report finds one log line.
    genReqId: () => randomUUID(),
    // Only exact paths: /applications/ is not /applications.
    routerOptions: { ignoreTrailingSlash: false },
    // Slow clients must not hold sockets and memory forever (Fastify's requestTimeout 0 would
    // let them). Node checks headersTimeout only every connectionsCheckingInterval (30 s by
    // default): checked ten times per timeout here, at most once a second.
    http: {
      headersTimeout: config.headersTimeoutMs,
      connectionsCheckingInterval: checkingIntervalMs(config.headersTimeoutMs),
    },
    keepAliveTimeout: config.keepAliveTimeoutMs,
  }).withTypeProvider<TypeBoxTypeProvider>()
  app.server.maxConnections = config.maxConnections
  enforceBodyRate(app, { minBytes: config.minBodyBytes, windowMs: config.bodyRateWindowMs })

  // JSON only: a text/plain body would otherwise reach the schema as a string.
  app.removeContentTypeParser('text/plain')
  app.setValidatorCompiler(validatorCompiler)
  app.setErrorHandler(handleError)
  // First of every hook: with authentication off a DNS-rebinding page must get nothing.
  if (deps.auth === null) requireLoopbackHost(app, hostRule(config.publicBaseUrl, config.devInsecureListenAnywhere))
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ error: `no route ${request.method} ${request.url.split('?')[0]}` })
  })
  // The id a 500's log line carries, so a caller can quote it.
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
  })
  const metrics = deps.metrics ?? createControlMetrics()
  // By route pattern, never the raw URL: ids in paths would make a series per resource.
  const tenants = new WeakMap<object, string | null>()
  app.addHook('onResponse', async (request, reply) => {
    metrics.recordRequest(request.method, request.routeOptions.url, reply.statusCode, tenants.get(request))
  })

  await registerOpenApi(app, { registryTokens: deps.registrySigner != null })

  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'getHealth',
        tags: ['health'],
        summary: 'Liveness: the process answers',
        security: [],
        response: { 200: { content: { 'text/plain': { schema: Type.Literal('ok') } } } },
      },
    },
    async (_request, reply) => reply.type('text/plain; charset=utf-8').send('ok'),
  )

  const draining = deps.draining ?? createDraining()
  // The followed logs end before Fastify waits for the requests in flight.
  app.addHook('preClose', (done) => {
    for (const end of draining.streams) end()
    done()
  })
  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'getReadiness',
        tags: ['health'],
        summary: 'Readiness: 200 while the process takes requests, 503 once it has begun to stop',
        security: [],
        response: {
          200: { content: { 'text/plain': { schema: Type.Literal('ok') } } },
          503: { content: { 'text/plain': { schema: Type.Literal('stopping') } } },
        },
      },
    },
    async (_request, reply) =>
      reply
        .code(draining.draining ? 503 : 200)
        .type('text/plain; charset=utf-8')
        .send(draining.draining ? 'stopping' : 'ok'),
  )

  // Public like /healthz, for Prometheus: keep it off the public ingress.
  app.get(
    '/metrics',
    {
      schema: {
        operationId: 'getProcessMetrics',
        tags: ['health'],
        summary: "The control plane's own metrics, in Prometheus's text format",
        security: [],
        response: { 200: { content: { 'text/plain': { schema: Type.String() } } } },
      },
    },
    async (_request, reply) => reply.type(metrics.contentType).send(await metrics.render()),
  )

  if (deps.registrySigner != null)
    await app.register(registryTokenRoutes, {
      db: deps.db,
      config,
      signer: deps.registrySigner,
      now: deps.registryClock ?? Date.now,
    })

  let openApiText: string | undefined
  await app.register(
    async (api) => {
      api.get(
        '/openapi.json',
        {
          schema: {
            operationId: 'getOpenApiDocument',
            tags: ['health'],
            summary: 'This API, as an OpenAPI 3.1 document',
            security: [],
            response: { 200: Type.Object({}, { additionalProperties: true }) },
          },
        },
        async (_request, reply) => {
          // Built once, on first request: the routes cannot change after start.
          openApiText ??= JSON.stringify(app.swagger())
          return reply.type('application/json; charset=utf-8').send(openApiText)
        },
      )
      consoleConfigRoute(api, config)

      await api.register(async (secured) => {
        // Every route below can refuse the caller or fail; the OpenAPI document says so once here.
        secured.addHook('onRoute', (route) => {
          route.schema = {
            ...route.schema,
            response: { ...errors(401, 403, 500, 503), ...(route.schema?.response as object) },
          }
        })
        if (deps.auth !== null) secured.addHook('onRequest', requireToken(deps.auth))
        // Every route's authorisation, once, before its handler (and before an upload is read):
        // a route under an application is the application's; any method but GET is a write.
        secured.addHook('preHandler', async (request, reply) => {
          const appId = (request.params as { appId?: string } | undefined)?.appId
          try {
            const { tenant } = await authorize(deps.db, callerOf(request), {
              write: request.method !== 'GET' && request.method !== 'HEAD',
              appId,
            })
            tenants.set(request, tenant)
          } catch (error) {
            // An upload is still unread here: end the connection after the refusal rather than
            // drain what could be gigabytes nobody may store.
            if (!request.raw.readableEnded) reply.header('connection', 'close')
            throw error
          }
        })
        const runtime = deps.runtime ?? noRuntime()
        const routeDeps: RouteDeps = {
          db: deps.db,
          config,
          runtime,
          deployments: deps.deployments ?? createReconciler({ db: deps.db, config, runtime, logger: deps.logger }),
          draining,
          embeddedMetrics: deps.embeddedMetrics ?? null,
          traces: deps.traces ?? null,
        }
        await secured.register(applicationRoutes, routeDeps)
        await secured.register(functionRoutes, routeDeps)
        await secured.register(sourceRoutes, routeDeps)
        await secured.register(buildRoutes, routeDeps)
        await secured.register(runtimeRoutes, routeDeps)
        await secured.register(metricsRoutes, routeDeps)
        await secured.register(meRoutes, routeDeps)
        await secured.register(traceRoutes, routeDeps)
      })
    },
    { prefix: API_PREFIX },
  )
  await registerConsole(app, config)

  return app
}

const checkingIntervalMs = (headersTimeoutMs: number): number =>
  Math.min(1000, Math.max(10, Math.floor(headersTimeoutMs / 10)))
