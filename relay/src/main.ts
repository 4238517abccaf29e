import { exitWith } from '@session-relay/common/lifecycle'
import { tracingConfigured } from '@session-relay/common/tracing/configured'
import { helpRequested } from '@session-relay/common/config/settings'
import { parseConfig, relayUsage } from './config.js'
import { ConfigError, ListenError, NativeUwsMissingError } from './errors.js'
import { createLogger } from './logger.js'
import { startRelay } from './server.js'
import { stopOnSignals } from './signals.js'
import { loadUws } from './http/uws.js'

async function main(): Promise<void> {
  const argv = process.argv.slice(2)
  if (helpRequested(argv)) {
    process.stdout.write(relayUsage())
    return
  }
  let config
  let uws
  try {
    config = parseConfig(argv, process.env)
    uws = loadUws(config.maxHeadersSize)
  } catch (error) {
    if (error instanceof ConfigError) exitWith(2, `relay: ${error.message}`)
    // The host cannot run this build, like a bad setting the operator's to fix before a restart helps.
    if (error instanceof NativeUwsMissingError) exitWith(2, `relay: ${error.message}`)
    throw error
  }

  const logger = createLogger(config.logLevel)
  // With no OTEL_* endpoint the SDK is never loaded, and every hook of it stays null.
  const tracing = tracingConfigured(process.env) ? (await import('./tracing/sdk.js')).startTracing() : null
  let relay
  try {
    relay = await startRelay(config, { logger, uws, tracing: tracing?.tracing ?? null })
  } catch (error) {
    if (error instanceof ConfigError) exitWith(2, `relay: ${error.message}`)
    // The operator's to fix, like a bad setting, but not a setting's fault: exit code 1.
    if (error instanceof ListenError) exitWith(1, `relay: ${error.message}`)
    logger.fatal({ err: error }, 'relay failed to start')
    process.exit(1)
  }

  // The spans of the sessions the stop closes leave before the process does.
  const stopped = relay
  const flushed = async (stop: Promise<void>): Promise<void> => {
    await stop
    await tracing?.shutdown()
  }
  stopOnSignals(
    logger,
    tracing === null ? relay : { drain: () => flushed(stopped.drain()), shutdown: () => flushed(stopped.shutdown()) },
    config.drainTimeoutMs,
  )
}

await main()
