// Where the cluster's configuration comes from, decided without the Kubernetes client: the
// client is about 980 modules, and the control plane loads it only when there is a cluster
// (server.ts), so the embedded default starts without it.
import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { ClusterSettings } from './settings.js'

export type KubeSource = { kind: 'file'; path: string } | { kind: 'in-cluster' } | { kind: 'default' }

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token'

/**
 * PLATFORM_KUBECONFIG, else the in-cluster service account, else the default kubeconfig
 * (KUBECONFIG or ~/.kube/config). Null when none of them exists: the endpoints that need a
 * cluster then answer 503 "cluster not configured".
 */
export function kubeSource(config: Pick<ClusterSettings, 'kubeconfig'>): KubeSource | null {
  if (config.kubeconfig !== '') return { kind: 'file', path: config.kubeconfig }
  if (process.env.KUBERNETES_SERVICE_HOST !== undefined && existsSync(SERVICE_ACCOUNT_TOKEN))
    return { kind: 'in-cluster' }
  if ((process.env.KUBECONFIG ?? '') !== '' || existsSync(join(homedir(), '.kube', 'config')))
    return { kind: 'default' }
  return null
}
