// What every route module gets from the app that registers it. Its own module, so routes
// depend on this type and not on the app that imports them.
import type { Cluster } from '../cluster/cluster.js'
import type { ControlConfig } from '../config.js'
import type { LocalRuntime } from '../local/local.js'
import type { Database } from '../store/db.js'
import type { Draining } from './draining.js'

/** At most one of cluster and local: where builds and deployments run (neither: they answer 503). */
export type RouteDeps = { db: Database; config: ControlConfig; cluster: Cluster | null; local?: LocalRuntime | null; draining: Draining }
