// Waiting on the API, which has no events: poll until `probe` gives a value, with a deadline
// that says what was waited for. Shared by the commands that wait for a build or a deployment.
import { setTimeout as sleep } from 'node:timers/promises'
import { WasmkubeError } from './errors.js'

const POLL_MS = 500

export async function until<T>(deadlineMs: number, what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + deadlineMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline)
      throw new WasmkubeError('network', `gave up waiting ${Math.round(deadlineMs / 1000)} s for ${what}`)
    await sleep(POLL_MS)
  }
}
