import { exitWith, stopOnSignals } from '@session-relay/common/lifecycle'
import { controlUsage, parseConfig } from './config.js'
import { ConfigError } from '@session-relay/common/config/settings'
import { createLogger } from './logger.js'
import { tracingPlan } from './tracing/configured.js'
import { createTraceStore, DEFAULT_TRACE_LIMITS } from './tracing/store.js'

async function main(): Promise<void> {
  // What the control plane writes (the embedded database, sources, builds, the generated key)
  // is its own: owner-only, whatever umask it was started under.
  process.umask(0o077)
  const argv = process.argv.slice(2)
  if (argv.includes('--help')) {
    process.stdout.write(`Usage: control [options]\n\n${controlUsage()}`)
    process.exit(0)
  }
  let config
  try {
    config = parseConfig(argv, process.env)
  } catch (error) {
    if (error instanceof ConfigError) exitWith(2, `control: ${error.message}`)
    throw error
  }

  // The SDK patches http, Fastify and pg as they load, so it starts before the application is
  // imported; with no OTEL_* endpoint and no traces kept it is never loaded at all.
  const plan = tracingPlan(process.env, config.tracesKept)
  const traces = plan.keepTraces ? createTraceStore({ traces: config.tracesKept, ...DEFAULT_TRACE_LIMITS }) : null
  const tracing = plan.loadSdk
    ? (await import('./tracing/sdk.js')).startTracing({
        exportOtlp: plan.exportOtlp,
        processors: traces === null ? [] : [traces.processor],
      })
    : null
  // Loaded only once the settings parse: Fastify, PGlite and the Kubernetes client take
  // seconds to load on a busy machine, which --help and a mistyped flag should not wait for.
  const { startControlPlane } = await import('./server.js')
  const logger = createLogger(config.logLevel)
  let server
  try {
    server = await startControlPlane(config, { logger, traces })
  } catch (error) {
    if (error instanceof ConfigError) exitWith(2, `control: ${error.message}`)
    logger.fatal({ err: error }, 'control plane failed to start')
    process.exit(1)
  }

  // The forced exit comes after the delay, not in the middle of it.
  // The spans of the last requests leave before the process does.
  stopOnSignals(
    logger,
    async () => {
      await server.close()
      await tracing?.shutdown()
    },
    config.shutdownDelayMs,
  )
}

await main()
