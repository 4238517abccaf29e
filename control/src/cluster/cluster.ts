// The cluster side of the control plane as the routes see it: the API client, the build
// watcher, and how often a log request looks again for a build pod that has not started.
import type { BuildWatcher } from './build-watcher.js'
import type { Kube } from './kube.js'

export type Cluster = {
  kube: Kube
  watcher: BuildWatcher
  /** Interval of the look for a build pod whose container has not started yet. */
  pollMs: number
}
