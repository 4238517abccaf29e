// How the relay process ends. The first SIGTERM drains (server.ts, drain()): an orchestrator
// sends it before replacing the pod, and the transfers under way should finish rather than
// start over. A second SIGTERM, or SIGINT (a person at a terminal), stops at once, with 1001
// to every peer. Either way the process exits 0, 1 if the stop itself fails.
import { SHUTDOWN_TIMEOUT_MS } from '@session-relay/common/lifecycle'
import type { Logger } from './logger.js'
import type { RelayServer } from './server.js'

/** setTimeout fires at once past this: the hard stop is never set beyond it. */
const MAX_TIMER_MS = 2 ** 31 - 1

export function stopOnSignals(
  logger: Logger,
  relay: Pick<RelayServer, 'drain' | 'shutdown'>,
  drainTimeoutMs: number,
): void {
  let signals = 0
  const exitWhenDone = (stopped: Promise<void>, hardStopMs: number): void => {
    // If the graceful path hangs: the orchestrator would SIGKILL anyway.
    setTimeout(() => process.exit(0), Math.min(hardStopMs, MAX_TIMER_MS)).unref()
    stopped.then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed')
        process.exit(1)
      },
    )
  }
  const onSignal = (signal: NodeJS.Signals): void => {
    signals++
    if (signal === 'SIGTERM' && signals === 1) {
      logger.info({ signal }, 'draining on signal')
      exitWhenDone(relay.drain(), drainTimeoutMs + SHUTDOWN_TIMEOUT_MS)
      return
    }
    logger.info({ signal }, 'shutting down')
    exitWhenDone(relay.shutdown(), SHUTDOWN_TIMEOUT_MS)
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
}
