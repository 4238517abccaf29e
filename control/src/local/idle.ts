// Scale to zero on this machine: which loaded applications have had no request for the idle
// timeout. Requests are counted by the worker (its `stats`, so requests at an application's own
// URL count as much as invokes); an application whose count has not moved since the timeout
// began is idle. The clock is injected: tests move it rather than wait.

export type IdleTracker = {
  /** The application was loaded now: its idle time starts here. */
  loaded: (appId: string) => void
  /** A request is on its way (an invoke): the application is not idle, whatever the counts say. */
  touch: (appId: string) => void
  /** The applications idle now, given each loaded application's request count; forgets the others. */
  idle: (counts: ReadonlyMap<string, number>) => string[]
  forget: (appId: string) => void
}

export function createIdleTracker(timeoutMs: number, now: () => number): IdleTracker {
  // requests: null until a count is seen after the load.
  const seen = new Map<string, { requests: number | null; since: number }>()
  return {
    loaded(appId) {
      seen.set(appId, { requests: null, since: now() })
    },
    touch(appId) {
      const entry = seen.get(appId)
      if (entry !== undefined) entry.since = now()
    },
    idle(counts) {
      const idle: string[] = []
      for (const appId of seen.keys()) if (!counts.has(appId)) seen.delete(appId)
      for (const [appId, requests] of counts) {
        const entry = seen.get(appId)
        if (entry === undefined) {
          seen.set(appId, { requests, since: now() })
          continue
        }
        if (entry.requests === null) entry.requests = requests
        if (entry.requests !== requests) {
          seen.set(appId, { requests, since: now() })
          continue
        }
        if (now() - entry.since >= timeoutMs) idle.push(appId)
      }
      return idle
    },
    forget(appId) {
      seen.delete(appId)
    },
  }
}
