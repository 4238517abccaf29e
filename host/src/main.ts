// The host CLI: serve one Spin application from an artifact reference on a loopback port.
// Prints one JSON line `{"url":...,"digest":...}` on stdout once it listens; the components'
// own stdout and stderr follow on stdout and stderr (the application's log); the host's log is
// pino JSON on stderr. SIGTERM/SIGINT close it; exit 1 when it cannot start, 2 for bad flags.
import pino from 'pino'
import { ConfigError, helpRequested, readSettings, usage } from '@session-relay/common/config/settings'
import { settings } from './config.js'
import type { HostConfig } from './config.js'
import { ALLOWED_RANGES_ENV } from './sandbox/addresses.js'

// Values are names' texts; the whole object is small (the control plane caps a variable at 64 KiB).
const MAX_VARIABLES_BYTES = 4 * 1024 * 1024

async function readVariables (): Promise<Record<string, string>> {
  let text = ''
  for await (const chunk of process.stdin.setEncoding('utf8')) {
    text += chunk as string
    if (text.length > MAX_VARIABLES_BYTES) throw new Error(`the variables on stdin are larger than ${MAX_VARIABLES_BYTES} bytes`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new Error('the variables on stdin are not one JSON object')
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || !Object.values(parsed).every((value) => typeof value === 'string')) {
    throw new Error('the variables on stdin must be one JSON object of strings')
  }
  return parsed as Record<string, string>
}

async function main (): Promise<number> {
  const argv = process.argv.slice(2)
  if (helpRequested(argv)) {
    process.stdout.write(usage(settings, 'node host/dist/main.js'))
    return 0
  }
  let config: HostConfig
  try {
    config = readSettings(settings, argv, process.env)
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    process.stderr.write(`${error.message}\n`)
    return 2
  }
  const logger = pino({ level: config.logLevel, base: { process: 'spin-host' } }, pino.destination(2))
  try {
    const variables = config.variablesStdin ? await readVariables() : undefined
    // Read by the address guard in preview2-shim's worker, which starts when spin-app.js loads.
    process.env[ALLOWED_RANGES_ENV] = config.allowPrivateOutbound.join(',')
    const { startSpinApp } = await import('./spin-app.js')
    const app = await startSpinApp({
      ref: config.ref,
      port: config.port,
      host: config.host,
      cacheDir: config.cacheDir,
      logger,
      dockerConfigDir: config.dockerConfig === '' ? null : config.dockerConfig,
      insecureRegistry: config.insecureRegistry,
      requestTimeoutMs: config.requestTimeoutMs,
      maxBodyBytes: config.maxBodyBytes,
      variables,
    })
    process.stdout.write(`${JSON.stringify({ url: app.url, digest: app.digest })}\n`)
    const stop = (): void => {
      void app.close().finally(() => process.exit(0))
    }
    process.once('SIGTERM', stop)
    process.once('SIGINT', stop)
    return -1
  } catch (error) {
    logger.error({ err: (error as Error).message }, 'cannot start the application')
    process.stderr.write(`cannot start: ${(error as Error).message}\n`)
    return 1
  }
}

const code = await main()
if (code >= 0) process.exitCode = code
