// deploy/ checked for real: each kustomization rendered by kustomize itself (built by
// scripts/install-kube-apiserver.sh at its pinned version) and applied server-side to the real
// API server (test/helpers/kube-apiserver.ts) with the CRDs the overlays use installed, so a
// manifest the API server would refuse fails here. Nothing runs what is applied (no kubelet or
// controllers): the objects are stored as a cluster would store them, which is the check. The
// rendering is also compared with test/helpers/manifests.ts, the reader the other manifest
// tests use: the same objects, the same names (ConfigMap hash suffixes aside) and namespaces.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { parseAllDocuments } from 'yaml'
import type { KubeApiServer } from '../helpers/kube-apiserver.js'
import { kubeApiServer, kubeBinDir } from '../helpers/kube-apiserver.js'
import { buildKustomization } from '../helpers/manifests.js'

t.setTimeout(300_000)

const repo = fileURLToPath(new URL('../..', import.meta.url))
const deploy = join(repo, 'deploy')
const KUSTOMIZATIONS = ['base', 'overlays/production', 'overlays/registry']

type Rendered = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }

function kustomize (dir: string): Rendered[] {
  const binary = join(kubeBinDir(), 'kustomize')
  if (!existsSync(binary)) throw new Error('kustomize is not built: run scripts/install-kube-apiserver.sh; npm test does it')
  const result = spawnSync(binary, ['build', join(deploy, dir)], { encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`kustomize build ${dir}: ${result.stderr}`)
  return parseAllDocuments(result.stdout).map((document) => document.toJS() as Rendered).filter((object) => object !== null)
}

/** The resource path of each kind, from discovery. */
async function resourcesOf (server: KubeApiServer, apiVersion: string): Promise<Map<string, { name: string; namespaced: boolean }>> {
  const answer = await server.admin('GET', apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`)
  if (answer.status !== 200) throw new Error(`discovery of ${apiVersion} answered ${answer.status}`)
  const list = (answer.body as { resources: Array<{ name: string; kind: string; namespaced: boolean }> }).resources
  return new Map(list.filter((r) => !r.name.includes('/')).map((r) => [r.kind, { name: r.name, namespaced: r.namespaced }]))
}

const key = (object: Rendered): string => `${object.kind}/${object.metadata.name.replace(/-[a-z0-9]{10}$/, '')}@${object.metadata.namespace ?? ''}`

for (const dir of KUSTOMIZATIONS) {
  t.test(`${dir}: kustomize's rendering is what the manifest tests read, and the API server takes all of it`, async (t) => {
    const rendered = kustomize(dir)
    const read = buildKustomization(deploy, join(deploy, dir)).manifests
    const generated = new Set(rendered.filter((o) => o.kind === 'ConfigMap' || o.kind === 'Secret').map(key))
    t.same(rendered.map(key).sort(), [...read.map(key), ...generated].filter((k, i, all) => all.indexOf(k) === i).sort(),
      'the same objects (the generators\' ConfigMaps are not manifests the reader lists)')

    const server = await kubeApiServer()
    // The base has no namespace: it goes where a user's kubectl would put it, a namespace of its own here.
    const fallback = `deploy-${dir.replace(/[^a-z]+/g, '-')}`
    const namespaces = new Set(rendered.map((o) => o.metadata.namespace ?? fallback))
    for (const namespace of namespaces) {
      if (rendered.some((o) => o.kind === 'Namespace' && o.metadata.name === namespace)) continue
      await server.admin('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } })
    }
    // Namespaces first, as kubectl orders them.
    const ordered = [...rendered.filter((o) => o.kind === 'Namespace'), ...rendered.filter((o) => o.kind !== 'Namespace')]
    const refused: string[] = []
    for (const object of ordered) {
      const resource = (await resourcesOf(server, object.apiVersion)).get(object.kind)
      if (resource === undefined) {
        refused.push(`${object.kind} ${object.metadata.name}: the API server does not serve ${object.apiVersion} ${object.kind}`)
        continue
      }
      const base = object.apiVersion.includes('/') ? `/apis/${object.apiVersion}` : `/api/${object.apiVersion}`
      const namespace = object.metadata.namespace ?? fallback
      const path = `${base}${resource.namespaced ? `/namespaces/${namespace}` : ''}/${resource.name}/${object.metadata.name}?fieldManager=kustomize-test&force=true`
      const answer = await server.admin('PATCH', path, JSON.stringify(object), 'application/apply-patch+yaml')
      if (answer.status !== 200 && answer.status !== 201) refused.push(`${object.kind} ${object.metadata.name}: ${answer.status} ${(answer.body as { message?: string }).message ?? answer.text}`)
    }
    t.same(refused, [], `every object of ${dir} applied`)
  })
}
