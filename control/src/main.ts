import { parseConfig } from './config.js'
import { ConfigError } from './errors.js'
import { createLogger } from './logger.js'
import { startControlPlane } from './server.js'

/** Hard stop if graceful shutdown hangs: orchestrators escalate to SIGKILL anyway. */
const SHUTDOWN_TIMEOUT_MS = 5_000

async function main (): Promise<void> {
  let config
  try {
    config = parseConfig(process.argv.slice(2), process.env)
  } catch (error) {
    if (error instanceof ConfigError) exitWith(2, `control: ${error.message}`)
    throw error
  }

  const logger = createLogger(config.logLevel)
  let server
  try {
    server = await startControlPlane(config, { logger })
  } catch (error) {
    if (error instanceof ConfigError) exitWith(2, `control: ${error.message}`)
    logger.fatal({ err: error }, 'control plane failed to start')
    process.exit(1)
  }

  const stop = (signal: NodeJS.Signals): void => {
    logger.info({ signal }, 'shutting down')
    setTimeout(() => process.exit(0), SHUTDOWN_TIMEOUT_MS).unref()
    server.close().then(() => process.exit(0), (error: unknown) => {
      logger.error({ err: error }, 'shutdown failed')
      process.exit(1)
    })
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

function exitWith (code: number, line: string): never {
  process.stderr.write(line.replace(/\n/g, ' ') + '\n')
  process.exit(code)
}

await main()
