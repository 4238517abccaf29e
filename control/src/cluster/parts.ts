// What the control plane starts when it has a cluster, in one module server.ts imports only
// then: each of these loads the Kubernetes client.
export { startBuildWatcher } from './build-watcher.js'
export { connectKube } from './kube.js'
export { tenantPullSecrets } from './pull-secret.js'
export { clusterRuntime } from './runtime.js'
export { watchSpinApps } from './spinapp-watch.js'
