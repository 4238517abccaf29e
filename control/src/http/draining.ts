// A replica going away: first unready (GET /readyz answers 503, so the load balancer stops
// sending it requests) while it still serves, then its followed logs end cleanly (the answer
// is complete, the follower reconnects elsewhere) and the listener closes.
export type Draining = {
  /** True once the process has begun to stop. */
  draining: boolean
  /** How to end each followed log now being sent. */
  readonly streams: Set<() => void>
}

export const createDraining = (): Draining => ({ draining: false, streams: new Set() })
