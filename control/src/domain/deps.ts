// What every domain function is given: the store, the settings, the one runtime the process
// started (cluster, this machine, or none), and the reconcile that brings what runs to what
// should run (domain/reconcile.ts).
import type { ControlConfig } from '../config.js'
import type { Runtime } from '../runtime/runtime.js'
import type { Database } from '../store/db.js'
import type { Reconciled } from './reconcile.js'

export type DomainDeps = {
  db: Database
  config: ControlConfig
  runtime: Runtime
  /** Reconcile the application now; resolves with how it ended (a failure is kept and retried). */
  reconcile: (appId: string) => Promise<Reconciled>
}
