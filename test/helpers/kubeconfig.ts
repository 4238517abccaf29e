// The one kubeconfig the test cluster's clients read: kube-controller-manager and spin-operator
// as the admin, the control plane as its namespace's ServiceAccount. A token, never a client
// certificate: the API server authenticates both from tokens.
import { writeFileSync } from 'node:fs'

export function writeKubeconfig(
  path: string,
  server: { url: string; ca: string },
  user: { name: string; token: string },
  namespace?: string,
): string {
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'test',
          cluster: { server: server.url, 'certificate-authority-data': Buffer.from(server.ca).toString('base64') },
        },
      ],
      users: [{ name: user.name, user: { token: user.token } }],
      contexts: [
        {
          name: 'test',
          context: { cluster: 'test', user: user.name, ...(namespace !== undefined ? { namespace } : {}) },
        },
      ],
      'current-context': 'test',
    }),
    { mode: 0o600 },
  )
  return path
}
