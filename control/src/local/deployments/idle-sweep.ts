// Scale to zero: every `sweepMs`, the worker's request counts (its `stats`) are read and the
// applications without a request for the timeout (idle.ts) are let go. One sweep at a time: a
// slow one ending after a newer one would hand the tracker old counts.
import type { IdleTracker } from '../idle.js'

export type IdleSweepDeps = {
  tracker: IdleTracker
  sweepMs: number
  /** The applications loaded now (not idle); a sweep with none asks nothing. */
  loaded: () => string[]
  /** Each application's request count, or null when the worker cannot say now. */
  requests: () => Promise<Record<string, { requests: number }> | null>
  /** The application is idle: let it go. */
  unload: (appId: string) => void
  /** Told the counts each sweep read (tests wait for a count rather than a time). */
  swept?: ((counts: ReadonlyMap<string, number>) => void) | undefined
}

/** Starts sweeping; the function returned stops it. */
export function startIdleSweep(deps: IdleSweepDeps): () => void {
  let sweeping = false
  async function sweep(): Promise<void> {
    const loaded = deps.loaded()
    if (sweeping || loaded.length === 0) return
    sweeping = true
    let apps: Record<string, { requests: number }> | null
    try {
      apps = await deps.requests()
    } catch {
      return
    } finally {
      sweeping = false
    }
    if (apps === null) return
    const read = apps
    const counts = new Map(loaded.map((appId) => [appId, read[appId]?.requests ?? 0]))
    for (const appId of deps.tracker.idle(counts)) deps.unload(appId)
    deps.swept?.(counts)
  }
  const timer = setInterval(() => void sweep(), deps.sweepMs)
  timer.unref()
  return () => clearInterval(timer)
}
