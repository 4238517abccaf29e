// The cluster side of the control plane as the routes see it: the API client, the build
// watcher, and how often a log request looks again for a build pod that has not started.
import type { BuildWatcher } from './build-watcher.js'
import type { Kube } from './kube.js'
import type { Relock } from './relocked-image.js'

export type Cluster = {
  kube: Kube
  watcher: BuildWatcher
  /** Interval of the look for a build pod whose container has not started yet. */
  pollMs: number
  /** How a deploy re-locks the image with the variables' names; relockReference unless a test replaces it. */
  relock?: Relock | undefined
  /**
   * Why the deploy after an application's newest build did not apply (the SpinApp kept its
   * image), until a deploy of it does: no answer carried the reason, so its deployment's message
   * says it. This process's own record: another replica's GET does not show it.
   */
  notApplied?: Map<string, string> | undefined
}
