// Waiting on the API, which has no events: poll until `probe` gives a value, with a deadline
// that says what was waited for. Shared by the commands that wait for a build or a deployment.
import { setTimeout as sleep } from 'node:timers/promises'
import { WasmkubeError } from './errors.js'

const POLL_MS = 500

export async function until<T>(
  deadlineMs: number,
  what: string,
  probe: () => Promise<T | undefined>,
  signal?: AbortSignal,
): Promise<T> {
  const deadline = Date.now() + deadlineMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline)
      throw new WasmkubeError('network', `gave up waiting ${Math.round(deadlineMs / 1000)} s for ${what}`)
    // Stopped by whoever runs the command: it stops waiting at once, not at the deadline.
    await sleep(POLL_MS, undefined, signal === undefined ? {} : { signal }).catch(() => {})
    if (signal?.aborted === true) throw new WasmkubeError('network', `stopped waiting for ${what}`)
  }
}
