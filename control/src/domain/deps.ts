// What every domain function is given: the store, the settings, the one runtime the process
// started (cluster, this machine, or none), and this process's record of deploys that did not
// apply.
import type { DomainSettings } from '../config.js'
import type { Runtime } from '../runtime/runtime.js'
import type { Database } from '../store/db.js'

export type DomainDeps = {
  db: Database
  config: DomainSettings
  runtime: Runtime
  /**
   * Why the deploy after an application's newest build did not apply (what ran before keeps
   * running), until a deploy of it does: no answer carried the reason, so its deployment's
   * message says it. This process's own record: another replica's GET does not show it.
   */
  notApplied: Map<string, string>
}
