// The Role shipped in deploy/ against what the code really calls: a complete scenario (builds
// to success and to failure, build logs, deploy, GET application with its deployment, settings
// with a secret, autoscaling on and off, the public route of either kind, invoke with every
// method, application logs, delete) runs against the fake API, which records every
// request as RBAC sees it (verb, API group, resource, subresource). Every request must be
// allowed by a rule of the Role, and every verb of every rule must have been used.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { parse } from 'yaml'
import type { Access } from '../fixtures/kube-api.js'
import { failJob, podOfJob, runJob, succeedJob } from '../fixtures/kube-jobs.js'
import { writePodLog } from '../fixtures/kube-pods.js'
import { SECRETS } from '../fixtures/kube-secrets.js'
import { setServiceBackend } from '../fixtures/kube-services.js'
import { operateSpinApp, SPINAPPS } from '../fixtures/kube-spinapps.js'
import { createApp, firstFunction, until } from '../helpers/control.js'
import { startClusterControl } from '../helpers/cluster.js'

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }
type Role = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; rules: Rule[] }

// The name deploy/overlays/registry gives --builder-registry-secret, which the Role names.
const REGISTRY_SECRET = 'registry-credentials'

const role = parse(readFileSync(new URL('../../deploy/base/control/role.yaml', import.meta.url), 'utf8')) as Role

const resourceOf = (access: Access): string => access.subresource === '' ? access.resource : `${access.resource}/${access.subresource}`
// resourceNames, when a rule has them, admit only requests for those objects by name.
const allows = (rule: Rule, access: Access): boolean =>
  rule.apiGroups.includes(access.group) && rule.resources.includes(resourceOf(access)) && rule.verbs.includes(access.verb) &&
  (rule.resourceNames === undefined || rule.resourceNames.includes(access.name))

t.test('the Role: a namespaced Role named control-plane, namespace left to kustomize', async (t) => {
  t.equal(role.apiVersion, 'rbac.authorization.k8s.io/v1')
  t.equal(role.kind, 'Role')
  t.equal(role.metadata.name, 'control-plane')
  t.equal(role.metadata.namespace, undefined)
  for (const rule of role.rules) {
    t.notOk(rule.verbs.includes('*') || rule.resources.includes('*') || rule.apiGroups.includes('*'), 'no wildcards')
  }
})

t.test('every request of a complete scenario is allowed by the Role, and every rule is used', async (t) => {
  const cluster = await startClusterControl(t, 'pglite', { flags: ['--public-base-url', 'https://fn.example.com', '--gateway', 'public', '--builder-registry-secret', REGISTRY_SECRET] })
  const { control, fake } = cluster
  fake.put(SECRETS, { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/dockerconfigjson', metadata: { name: REGISTRY_SECRET }, data: { '.dockerconfigjson': Buffer.from('{"auths":{}}').toString('base64') } })
  const app = await createApp(control, 'hello')
  const fn = firstFunction(app)

  const failing = (await control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
  runJob(fake, `build-${failing.id}`)
  writePodLog(fake, podOfJob(fake, `build-${failing.id}`).metadata.name, 'error\n')
  t.equal((await control.call('GET', `/applications/${app.id}/builds/${failing.id}/logs`)).text, 'error\n')
  failJob(fake, `build-${failing.id}`, { message: 'error' })
  await until(async () => ((await control.call('GET', `/applications/${app.id}/builds/${failing.id}`)).body as { status: string }).status === 'failed', 5000, 'failed')

  const build = (await control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
  runJob(fake, `build-${build.id}`)
  succeedJob(fake, `build-${build.id}`, 'registry.test/apps/hello@sha256:' + 'c'.repeat(64))
  await until(() => fake.get(SPINAPPS, 'hello') !== undefined, 5000, 'deployed')
  t.equal((await control.call('GET', `/applications/${app.id}/builds/${build.id}/logs?follow=true`)).status, 200)
  operateSpinApp(fake, 'hello')
  t.equal((await control.call('POST', `/applications/${app.id}/deploy`)).status, 202)
  t.match((await control.call('GET', `/applications/${app.id}`)).body, { deployment: { ready: true } })

  const secret = { resources: { cpuRequest: '100m' }, autoscaling: { minReplicas: 1, maxReplicas: 3, targetCpuPercent: 50 }, variables: { token: { secret: 's' } } }
  t.equal((await control.call('PATCH', `/applications/${app.id}`, { json: secret })).status, 200, 'secret, autoscaler and route applied')
  const keep = { autoscaling: null, variables: { token: { secret: true } } }
  t.equal((await control.call('PATCH', `/applications/${app.id}`, { json: keep })).status, 200, 'secret kept, autoscaler deleted')
  // The other kind of route, from a control plane configured for it on the same cluster.
  const ingress = await startClusterControl(t, 'pglite', { fake, store: control.store, flags: ['--public-base-url', 'https://fn.example.com', '--public-route', 'ingress'] })
  t.equal((await ingress.control.call('POST', `/applications/${app.id}/deploy`)).status, 202)
  await ingress.control.close()

  const backend = await import('node:http').then(({ createServer }) => createServer((_request, response) => response.end('ok')))
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { backend.closeAllConnections(); backend.close(() => resolve()) }))
  setServiceBackend(fake, 'hello', `http://127.0.0.1:${(backend.address() as { port: number }).port}`)
  for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']) {
    const reply = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, { json: { method, path: '/' } })
    t.match(reply.body, { status: 200 }, `invoke ${method}`)
  }
  writePodLog(fake, 'hello-pod-0', 'serving\n')
  t.equal((await control.call('GET', `/applications/${app.id}/logs?tail=10`)).text, 'serving\n')
  t.equal((await control.call('DELETE', `/applications/${app.id}`)).status, 204)

  const denied = fake.accesses.filter((access) => !role.rules.some((rule) => allows(rule, access)))
  t.same(denied, [], 'every request the control plane made is allowed by the Role')
  for (const rule of role.rules) {
    for (const group of rule.apiGroups) {
      for (const resource of rule.resources) {
        for (const verb of rule.verbs) {
          const used = fake.accesses.some((access) => access.group === group && resourceOf(access) === resource && access.verb === verb &&
            (rule.resourceNames === undefined || rule.resourceNames.includes(access.name)))
          t.ok(used, `the Role's ${verb} ${group === '' ? 'core' : group} ${resource} is used`)
        }
      }
    }
  }
})
