// The real API server of the cluster tests (test/helpers/kube-apiserver.ts): it serves the CRDs
// the control plane needs, and a namespace's control-plane identity has the Role from deploy/
// and nothing more, through the kubeconfig the control plane is given.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { parse } from 'yaml'
import { kubeNamespace, kubeRequest } from '../helpers/kube-apiserver.js'
import { tempDir } from '../helpers/cluster.js'

t.setTimeout(300_000)

t.test('a namespace where the control plane has the Role from deploy/, and no more', async (t) => {
  const ns = await kubeNamespace(t, tempDir(t))
  const config = parse(readFileSync(ns.kubeconfig, 'utf8')) as {
    users: Array<{ user: { token: string } }>
    contexts: Array<{ context: { namespace: string } }>
  }
  t.equal(config.contexts[0]?.context.namespace, ns.namespace)
  const token = config.users[0]?.user.token as string
  const as = (method: string, path: string, body?: unknown, contentType?: string): Promise<number> =>
    kubeRequest(ns.server.url, ns.server.ca, token, method, path, body, contentType).then((answer) => answer.status)
  const base = `/api/v1/namespaces/${ns.namespace}`
  t.equal(await as('GET', `/apis/batch/v1/namespaces/${ns.namespace}/jobs`), 200, 'list jobs: granted')
  t.equal(await as('GET', `${base}/secrets`), 403, 'list secrets: not granted')
  t.equal(
    await as('GET', `${base}/secrets/registry-credentials`),
    404,
    'get the registry Secret by name: granted (it does not exist)',
  )
  t.equal(await as('GET', `${base}/secrets/other`), 403, 'get another Secret: not granted')
  t.equal(await as('GET', `/apis/batch/v1/jobs`), 403, 'jobs of every namespace: not granted')
  t.equal(await as('GET', '/api/v1/namespaces'), 403, 'namespaces: not granted')
  const spinApp = {
    apiVersion: 'core.spinkube.dev/v1alpha1',
    kind: 'SpinApp',
    metadata: { name: 'probe' },
    spec: { image: 'registry.test/probe:1', executor: 'containerd-shim-spin', replicas: 1 },
  }
  t.equal(
    await as(
      'PATCH',
      `/apis/core.spinkube.dev/v1alpha1/namespaces/${ns.namespace}/spinapps/probe?fieldManager=test`,
      JSON.stringify(spinApp),
      'application/apply-patch+yaml',
    ),
    201,
    'a SpinApp created by apply (patch and create granted), the CRD served',
  )
  t.equal(
    await as(
      'PATCH',
      `/apis/gateway.networking.k8s.io/v1/namespaces/${ns.namespace}/httproutes/probe?fieldManager=test`,
      JSON.stringify({
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'HTTPRoute',
        metadata: { name: 'probe' },
        spec: { rules: [{ backendRefs: [{ name: 'probe', port: 80 }] }] },
      }),
      'application/apply-patch+yaml',
    ),
    201,
    'an HTTPRoute created by apply, the CRD served',
  )
})
