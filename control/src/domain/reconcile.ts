// Where a deployment is decided. What should run is stored (store/deployments.ts: the newest
// successful build, the settings' and variables' generations, POST deploy's generation); one
// reconcile brings what runs to it, the same for every runtime, again and again: after a
// build's success, a change of settings or variables, POST deploy, the start, the worker's
// restart, a watch event, and every resync interval. It applies when the target changed since
// the last apply that held, or when what runs drifted from it (a SpinApp deleted or edited by
// hand, a worker that lost it); a failure is kept in the conditions and retried with
// exponential back-off. A lease in the database lets one replica at a time reconcile an
// application, and a reconcile asked for while one runs here runs once more after it.
import { randomUUID } from 'node:crypto'
import type { Logger } from '../logger.js'
import type { Runtime } from '../runtime/runtime.js'
import { findApplication } from '../store/applications.js'
import { markDeployed } from '../store/builds.js'
import type { Database } from '../store/db.js'
import type { Target } from '../store/deployments.js'
import {
  dueApplications,
  readDesired,
  recordApplied,
  recordConditions,
  recordFailure,
  releaseLease,
  takeLease,
} from '../store/deployments.js'
import { inSpan } from '../tracing/spans.js'
import { differs, readyCondition, setCondition } from './conditions.js'
import type { PolicySettings } from './policy-settings.js'
import { concurrencyInForce, resourcesInForce } from './policy.js'

/**
 * How one reconcile ended: `idle` nothing to run (no successful build, no runtime, no such
 * application); `elsewhere` another replica holds the application's lease.
 */
export type Reconciled =
  { kind: 'idle' | 'elsewhere' | 'in-sync' | 'applied' } | { kind: 'failed'; error: Error; retryInMs: number }

export type Reconciler = {
  /**
   * `waitMs`: how long to wait for another replica's lease before answering `elsewhere` (a
   * caller that reports the outcome, PATCH or POST deploy, waits; a resync or an event does not).
   */
  reconcile: (appId: string, options?: { waitMs?: number }) => Promise<Reconciled>
  /**
   * Runs `fn` with no reconcile of the application running meanwhile, in this process or
   * (through the lease, waited for up to its length) another: what removes it goes through here,
   * so no apply re-creates what it removes.
   */
  exclusive: <T>(appId: string, fn: () => Promise<T>) => Promise<T>
  /** Every application with a successful build whose retry is due, one after another. */
  resync(): Promise<void>
  /** The first resync (the start's) and then one every `intervalMs` (--resync-interval); resolves when the first is done. */
  start(intervalMs: number): Promise<void>
  close(): Promise<void>
}

export type ReconcilerDeps = {
  db: Database
  config: PolicySettings
  runtime: Runtime
  logger: Logger
  /** The first retry's delay after a failed apply, doubled per failure up to maxMs. */
  backoff?: { initialMs: number; maxMs: number }
  /** How long a replica's lease lasts if it dies holding it. */
  leaseMs?: number
  now?: () => number
}

const DEFAULT_BACKOFF = { initialMs: 1000, maxMs: 5 * 60_000 }
const DEFAULT_LEASE_MS = 120_000
/** How long a PATCH or POST deploy waits for another replica's reconcile of the application: it says how its own went. */
export const REPORTED_WAIT_MS = 30_000
/** Re-reads after an apply that found the target changed meanwhile (another replica's PATCH), at most. */
const MAX_ROUNDS = 3

const sameTarget = (a: Target, b: Target): boolean =>
  a.image === b.image &&
  a.settingsGeneration === b.settingsGeneration &&
  a.variablesGeneration === b.variablesGeneration &&
  a.generation === b.generation

export function createReconciler(deps: ReconcilerDeps): Reconciler {
  const { db, config, runtime, logger } = deps
  const backoff = deps.backoff ?? DEFAULT_BACKOFF
  const leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS
  const now = deps.now ?? Date.now
  // This process's name on the leases it takes.
  const holder = randomUUID()
  const running = new Map<string, Promise<Reconciled>>()
  const queued = new Map<string, Promise<Reconciled>>()
  const retries = new Map<string, NodeJS.Timeout>()
  let closed = false
  let resyncing: Promise<void> | null = null
  let interval: NodeJS.Timeout | null = null

  const retryIn = (failures: number): number =>
    Math.min(backoff.initialMs * 2 ** Math.min(failures - 1, 30), backoff.maxMs)

  const scheduleRetry = (appId: string, ms: number): void => {
    clearTimeout(retries.get(appId))
    const timer = setTimeout(() => {
      retries.delete(appId)
      void reconcile(appId)
    }, ms)
    timer.unref()
    retries.set(appId, timer)
  }

  /** One pass under the lease: apply when needed, then record what answers. */
  const leased = async (appId: string, waitMs: number): Promise<boolean> => {
    const deadline = now() + waitMs
    for (;;) {
      if (await takeLease(db, appId, holder, leaseMs)) return true
      if (now() >= deadline || closed) return false
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  const pass = async (appId: string, round: number, waitMs: number): Promise<Reconciled> => {
    const desired = await readDesired(db, appId)
    const app = await findApplication(db, appId)
    if (desired === null || desired.target === null || app === null) return { kind: 'idle' }
    try {
      runtime.checkDeploy()
    } catch {
      return { kind: 'idle' }
    }
    if (!(await leased(appId, waitMs))) return { kind: 'elsewhere' }
    const { target, state } = desired
    let outcome: Reconciled
    try {
      const unchanged = state.applied !== null && sameTarget(state.applied, target)
      // What runs is looked at only when nothing changed: a change is applied anyway.
      const drifted = unchanged && (await runtime.drifted(app, state.applied?.runtime ?? {}).catch(() => false))
      let conditions = state.conditions
      if (unchanged && !drifted) {
        outcome = { kind: 'in-sync' }
      } else {
        try {
          // A span for the apply only: a resync that finds an application in sync makes none.
          const applied = await inSpan(
            'deploy',
            {
              'platform.application.id': appId,
              'platform.deploy.reason': drifted ? 'drifted' : 'changed',
              'platform.deploy.attempt': state.failures + 1,
            },
            () =>
              runtime.deploy(
                {
                  ...app,
                  resources: resourcesInForce(config, app.settings.resources),
                  concurrency: concurrencyInForce(config, app.settings.concurrency),
                },
                target.image,
              ),
          )
          // Which build runs, when the runtime runs it re-locked under another digest.
          await markDeployed(db, appId, target.image)
          conditions = setCondition(
            conditions,
            drifted
              ? {
                  type: 'Deployed',
                  status: 'True',
                  reason: 'Restored',
                  message: 'what runs had changed: applied again',
                }
              : {
                  type: 'Deployed',
                  status: 'True',
                  reason: 'Applied',
                  message: 'the newest build runs with the settings now',
                },
            new Date(now()),
          )
          await recordApplied(db, appId, { ...target, runtime: applied }, conditions)
          if (drifted) logger.info({ appId }, 'what runs had drifted from what was applied: applied again')
          outcome = { kind: 'applied' }
        } catch (error) {
          const failures = state.failures + 1
          const retryInMs = retryIn(failures)
          conditions = setCondition(
            conditions,
            { type: 'Deployed', status: 'False', reason: 'ApplyFailed', message: (error as Error).message },
            new Date(now()),
          )
          await recordFailure(db, appId, failures, new Date(now() + retryInMs), conditions)
          logger.warn(
            { appId, failures, retryInMs, reason: (error as Error).message },
            'deployment not applied: retried after a back-off',
          )
          if (!closed) scheduleRetry(appId, retryInMs)
          return { kind: 'failed', error: error as Error, retryInMs }
        }
      }
      // Ready as the runtime reports it after an apply: kept, so every replica answers the same.
      // Not at every resync: a read of the application (domain/applications.ts) keeps it current,
      // and a resync that reads what runs for every application would cost the cluster more.
      const live = outcome.kind === 'applied' ? await runtime.deployment(app, target.image).catch(() => null) : null
      if (live !== null) {
        const ready = readyCondition(live)
        if (differs(conditions, ready))
          await recordConditions(db, appId, setCondition(conditions, ready, new Date(now())))
      }
    } finally {
      await releaseLease(db, appId, holder)
    }
    // Deleted while it was applied (on another replica, say): what was applied goes too.
    if (outcome.kind === 'applied' && (await findApplication(db, appId)) === null) await runtime.remove(app)
    // Changed while the lease was held (another replica's PATCH found it taken): once more.
    const after = await readDesired(db, appId)
    if (after?.target != null && !sameTarget(after.target, target) && round < MAX_ROUNDS)
      return pass(appId, round + 1, waitMs)
    return outcome
  }

  const reconcile = (appId: string, options: { waitMs?: number } = {}): Promise<Reconciled> => {
    const waiting = queued.get(appId)
    if (waiting !== undefined) return waiting
    const current = running.get(appId)
    const run = (): Promise<Reconciled> => {
      queued.delete(appId)
      const done = pass(appId, 1, options.waitMs ?? 0).finally(() => {
        if (running.get(appId) === done) running.delete(appId)
      })
      running.set(appId, done)
      return done
    }
    if (current === undefined) return run()
    // One more after the one running: it may have read what is stored before this change.
    const next = current.then(run, run)
    queued.set(appId, next)
    return next
  }

  const exclusive = async <T>(appId: string, fn: () => Promise<T>): Promise<T> => {
    // Behind what runs or waits here; then in their place (no await in between), so a
    // reconcile asked for meanwhile (a watch event) waits for `fn` and finds what it left.
    for (let busy = queued.get(appId) ?? running.get(appId); busy !== undefined;) {
      await busy.catch(() => {})
      busy = queued.get(appId) ?? running.get(appId)
    }
    let release!: () => void
    const holding = new Promise<Reconciled>((resolve) => {
      release = () => resolve({ kind: 'idle' })
    })
    running.set(appId, holding)
    try {
      // Another replica's apply: waited for, up to the lease's length.
      await leased(appId, leaseMs)
      return await fn()
    } finally {
      clearTimeout(retries.get(appId))
      retries.delete(appId)
      await releaseLease(db, appId, holder).catch(() => {})
      if (running.get(appId) === holding) running.delete(appId)
      release()
    }
  }

  const resync = (): Promise<void> => {
    resyncing ??= (async () => {
      for (const appId of await dueApplications(db)) {
        if (closed) return
        await reconcile(appId).catch((error: unknown) => {
          logger.warn({ appId, reason: (error as Error).message }, 'reconcile failed')
        })
      }
    })().finally(() => {
      resyncing = null
    })
    return resyncing
  }

  return {
    reconcile,
    exclusive,
    resync,
    start(intervalMs) {
      interval = setInterval(() => {
        resync().catch((error: unknown) => logger.warn({ reason: (error as Error).message }, 'resync failed'))
      }, intervalMs)
      interval.unref()
      return resync()
    },
    async close() {
      closed = true
      if (interval !== null) clearInterval(interval)
      for (const timer of retries.values()) clearTimeout(timer)
      retries.clear()
      await Promise.allSettled([...running.values(), ...queued.values(), resyncing])
    },
  }
}
