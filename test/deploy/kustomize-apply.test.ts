// deploy/ checked for real: each kustomization rendered by kustomize itself (built by
// scripts/install-kube-apiserver.sh at its pinned version) and applied server-side to the real
// API server (test/helpers/kube-apiserver.ts) with the CRDs the overlays use installed, so a
// manifest the API server would refuse fails here. Nothing runs what is applied (no kubelet or
// controllers): the objects are stored as a cluster would store them, which is the check.
// test/deploy/manifests.test.ts reads the same rendering (test/helpers/manifests.ts).
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import type { KubeApiServer } from '../helpers/kube-apiserver.js'
import { kubeApiServer } from '../helpers/kube-apiserver.js'
import { kustomize } from '../helpers/manifests.js'

t.setTimeout(300_000)

const repo = fileURLToPath(new URL('../..', import.meta.url))
const deploy = join(repo, 'deploy')
const KUSTOMIZATIONS = ['base', 'overlays/production', 'overlays/registry']

/** The resource path of each kind, from discovery. */
async function resourcesOf(
  server: KubeApiServer,
  apiVersion: string,
): Promise<Map<string, { name: string; namespaced: boolean }>> {
  const answer = await server.admin('GET', apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`)
  if (answer.status !== 200) throw new Error(`discovery of ${apiVersion} answered ${answer.status}`)
  const list = (answer.body as { resources: Array<{ name: string; kind: string; namespaced: boolean }> }).resources
  return new Map(
    list.filter((r) => !r.name.includes('/')).map((r) => [r.kind, { name: r.name, namespaced: r.namespaced }]),
  )
}

for (const dir of KUSTOMIZATIONS) {
  t.test(`${dir}: the API server takes all of kustomize's rendering`, async (t) => {
    const rendered = kustomize(join(deploy, dir))
    const server = await kubeApiServer()
    // The base has no namespace: it goes where a user's kubectl would put it, a namespace of its own here.
    const fallback = `deploy-${dir.replace(/[^a-z]+/g, '-')}`
    const namespaces = new Set(rendered.map((o) => o.metadata.namespace ?? fallback))
    for (const namespace of namespaces) {
      if (rendered.some((o) => o.kind === 'Namespace' && o.metadata.name === namespace)) continue
      await server.admin('POST', '/api/v1/namespaces', {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: namespace },
      })
    }
    // Namespaces first, as kubectl orders them.
    const ordered = [
      ...rendered.filter((o) => o.kind === 'Namespace'),
      ...rendered.filter((o) => o.kind !== 'Namespace'),
    ]
    const refused: string[] = []
    for (const object of ordered) {
      const resource = (await resourcesOf(server, object.apiVersion)).get(object.kind)
      if (resource === undefined) {
        refused.push(
          `${object.kind} ${object.metadata.name}: the API server does not serve ${object.apiVersion} ${object.kind}`,
        )
        continue
      }
      const base = object.apiVersion.includes('/') ? `/apis/${object.apiVersion}` : `/api/${object.apiVersion}`
      const namespace = object.metadata.namespace ?? fallback
      const path = `${base}${resource.namespaced ? `/namespaces/${namespace}` : ''}/${resource.name}/${object.metadata.name}?fieldManager=kustomize-test&force=true`
      const answer = await server.admin('PATCH', path, JSON.stringify(object), 'application/apply-patch+yaml')
      if (answer.status !== 200 && answer.status !== 201)
        refused.push(
          `${object.kind} ${object.metadata.name}: ${answer.status} ${(answer.body as { message?: string }).message ?? answer.text}`,
        )
    }
    t.same(refused, [], `every object of ${dir} applied`)
  })
}
