// What every route module gets from the app that registers it. Its own module, so routes
// depend on this type and not on the app that imports them.
import type { DomainDeps } from '../domain/deps.js'
import type { EmbeddedMetrics } from '../metrics/embedded.js'
import type { TraceStore } from '../tracing/store.js'
import type { Draining } from './draining.js'

export type RouteDeps = DomainDeps & {
  draining: Draining
  /**
   * Without Prometheus, the control plane's own series; `workloads` when this machine runs the
   * applications (the local runtime), whose series it then has too.
   */
  embeddedMetrics?: { store: EmbeddedMetrics; workloads: boolean } | null
  /** The last traces kept in memory; null: none kept (--traces-kept 0, or no SDK). */
  traces?: TraceStore | null
}
