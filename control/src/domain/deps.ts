// What every domain function is given: the store, the settings, the one runtime the process
// started (cluster, this machine, or none), and the reconcile that brings what runs to what
// should run (domain/reconcile.ts).
import type { DomainSettings } from '../config.js'
import type { Runtime } from '../runtime/runtime.js'
import type { Database } from '../store/db.js'
import type { Reconciler } from './reconcile.js'

export type DomainDeps = {
  db: Database
  config: DomainSettings
  runtime: Runtime
  /** Reconciles an application now (a failure is kept and retried), or removes it with none running. */
  deployments: Pick<Reconciler, 'reconcile' | 'exclusive'>
}
