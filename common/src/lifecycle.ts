// How both processes end: one line on stderr for what stops them before logging exists, and a
// graceful stop on SIGTERM or SIGINT with a hard limit.

/** Hard stop if graceful shutdown hangs: orchestrators escalate to SIGKILL anyway. */
export const SHUTDOWN_TIMEOUT_MS = 5_000

/** One line on stderr, then exit: the form every startup error takes. */
export function exitWith(code: number, line: string): never {
  process.stderr.write(line.replace(/\n/g, ' ') + '\n')
  process.exit(code)
}

type ShutdownLogger = {
  info(details: object, message: string): void
  error(details: object, message: string): void
}

/** On SIGTERM or SIGINT: log it, run `stop`, exit 0 (1 if stop fails); forced exit after `graceMs` + 5 s. */
export function stopOnSignals(logger: ShutdownLogger, stop: () => Promise<void>, graceMs = 0): void {
  const onSignal = (signal: NodeJS.Signals): void => {
    logger.info({ signal }, 'shutting down')
    setTimeout(() => process.exit(0), graceMs + SHUTDOWN_TIMEOUT_MS).unref()
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed')
        process.exit(1)
      },
    )
  }
  process.once('SIGTERM', onSignal)
  process.once('SIGINT', onSignal)
}
