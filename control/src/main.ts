import { exitWith, stopOnSignals } from '../../common/src/lifecycle.js'
import { parseConfig } from './config.js'
import { ConfigError } from './errors.js'
import { createLogger } from './logger.js'
import { startControlPlane } from './server.js'

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

  stopOnSignals(logger, () => server.close())
}

await main()
