// Each application's log on this machine: the worker's log lines naming it (its functions'
// own output as they printed it, the worker's lines about it as they are) and the local
// runtime's notes on it (loaded, idle, the worker down), kept across restarts in a file per
// application (log-buffer.ts). Worker lines naming no deployed application go to the control
// plane's log.
import { join } from 'node:path'
import type { Logger } from '../../logger.js'
import type { LogBuffer } from '../log-buffer.js'
import type { WorkerLogLine } from '../worker-client/process.js'

/** The application's log file in `logsDir`; none for an id that is not the API's (a UUID). */
export const appLogFile = (logsDir: string, appId: string): string | undefined =>
  /^[A-Za-z0-9-]{1,64}$/.test(appId) ? join(logsDir, `${appId}.log`) : undefined

/** A line of the local runtime's own in the application's log, as the worker's are written. */
export function note(log: LogBuffer, level: 'info' | 'warn' | 'error', msg: string): void {
  log.write(Buffer.from(`${JSON.stringify({ time: Date.now(), level, msg })}\n`))
}

/** A handler for the worker's log lines: to the log of the application named, if deployed. */
export function routeWorkerLog(
  logger: Logger,
  logOf: (appId: string) => LogBuffer | undefined,
): (line: WorkerLogLine, raw: string) => void {
  return (line, raw) => {
    const log = typeof line.app === 'string' ? logOf(line.app) : undefined
    if (log === undefined) {
      if (line.level === 'error' || line.level === 'warn') logger.warn({ worker: line }, 'local worker')
      else logger.debug({ worker: line }, 'local worker')
      return
    }
    const text = line.msg === 'guest output' && typeof line.line === 'string' ? line.line : raw
    log.write(Buffer.from(`${text}\n`))
  }
}
