// The Role shipped in deploy/ against what the code really calls, on the real API server
// (test/helpers/kube-apiserver.ts): the control plane runs as the ServiceAccount the
// RoleBinding from deploy/ binds, with the Role from deploy/ and nothing else, through a
// complete scenario (builds to success and to failure, build logs, deploy, GET application with
// its deployment, settings with a secret, autoscaling on and off, the public route of either
// kind, invoke with every method, application logs, delete). The API server's audit log holds
// every request it made, as RBAC decided it: none may have been refused (403), and every verb of
// every rule must have been used (each verb removed in turn fails this file: checked one by one,
// docs/testing.md). Build and application logs come from the kubelet stand-in
// (test/fixtures/kube-real.ts) through pods/log; invoke reaches no pod here (no endpoints): the
// API server authorizes it before it finds that out, which is what this test reads.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { parse } from 'yaml'
import type { AuditEvent } from '../helpers/kube-apiserver.js'
import { failJob, kubeletOf, operateSpinApp, runJob, SECRET, SPINAPP, succeedJob } from '../fixtures/kube-real.js'
import { untilEndpoints } from '../fixtures/kube-real-endpoints.js'
import { createApp, firstFunction, until } from '../helpers/control.js'
import { startRealClusterControl } from '../helpers/cluster.js'

t.setTimeout(300_000)

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }
type Role = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; rules: Rule[] }

// The name deploy/overlays/registry gives --builder-registry-secret, which the Role names.
const REGISTRY_SECRET = 'registry-credentials'

const role = parse(readFileSync(new URL('../../deploy/base/control/role.yaml', import.meta.url), 'utf8')) as Role

const resourceOf = (event: AuditEvent): string => {
  const ref = event.objectRef ?? {}
  return ref.subresource === undefined ? (ref.resource ?? '') : `${ref.resource ?? ''}/${ref.subresource}`
}

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
  const cluster = await startRealClusterControl(t, 'pglite', {
    flags: [
      '--public-base-url',
      'https://fn.example.com',
      '--gateway',
      'public',
      '--builder-registry-secret',
      REGISTRY_SECRET,
    ],
  })
  const { control, kube } = cluster
  await kube.must('POST', kube.path(SECRET), {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/dockerconfigjson',
    metadata: { name: REGISTRY_SECRET },
    data: { '.dockerconfigjson': Buffer.from('{"auths":{}}').toString('base64') },
  })
  const app = await createApp(control, 'hello')
  const fn = firstFunction(app)

  const failing = (await control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
  const pod = await runJob(kube, `build-${failing.id}`)
  kubeletOf(kube).write(pod.metadata.name, 'error\n')
  t.equal((await control.call('GET', `/applications/${app.id}/builds/${failing.id}/logs`)).text, 'error\n')
  await failJob(kube, `build-${failing.id}`, { message: 'error' })
  await until(
    async () =>
      ((await control.call('GET', `/applications/${app.id}/builds/${failing.id}`)).body as { status: string })
        .status === 'failed',
    20_000,
    'failed',
  )

  const build = (await control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
  await runJob(kube, `build-${build.id}`)
  await succeedJob(kube, `build-${build.id}`, 'registry.test/apps/hello@sha256:' + 'c'.repeat(64))
  await until(() => cluster.finished.some((b) => b.id === build.id), 20_000, 'deployed')
  t.ok(await kube.get(SPINAPP, 'hello'), 'SpinApp applied')
  await control.call('GET', `/applications/${app.id}/builds/${build.id}/logs?follow=true`)
  await operateSpinApp(kube, 'hello')
  t.equal((await control.call('POST', `/applications/${app.id}/deploy`)).status, 202)
  t.match((await control.call('GET', `/applications/${app.id}`)).body, { deployment: { ready: true } })

  const secret = {
    resources: { cpuRequest: '100m' },
    autoscaling: { minReplicas: 1, maxReplicas: 3, targetCpuPercent: 50 },
    variables: { token: { secret: 's' } },
  }
  t.equal(
    (await control.call('PATCH', `/applications/${app.id}`, { json: secret })).status,
    200,
    'secret, autoscaler and route applied',
  )
  const keep = { autoscaling: null, variables: { token: { secret: true } } }
  t.equal(
    (await control.call('PATCH', `/applications/${app.id}`, { json: keep })).status,
    200,
    'secret kept, autoscaler deleted',
  )
  // The other kind of route, from a control plane configured for it on the same cluster.
  const ingress = await startRealClusterControl(t, 'pglite', {
    kube,
    store: control.store,
    flags: ['--public-base-url', 'https://fn.example.com', '--public-route', 'ingress'],
  })
  t.equal((await ingress.control.call('POST', `/applications/${app.id}/deploy`)).status, 202)
  await ingress.control.close()

  // Its running pods fail their readiness probe: the Service has no ready endpoint.
  for (const pod of await kubeletOf(kube).pods('core.spinkube.dev/app-name=hello'))
    if ((pod.status as { phase?: string } | undefined)?.phase === 'Running')
      await kubeletOf(kube).start(pod.metadata.name, false)
  await untilEndpoints(kube, 'hello', 0)
  for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']) {
    // No ready endpoint behind the Service here: the proxy is authorized, then finds no pod. A
    // HEAD's 503 has no Status body: the EndpointSlices tell it from a function's 503.
    const reply = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, {
      json: { method, path: '/' },
    })
    t.same(
      reply.body,
      { error: 'application unreachable: no pod of it is ready' },
      `invoke ${method} reached the proxy`,
    )
  }
  const [serving] = await kubeletOf(kube).pods('core.spinkube.dev/app-name=hello')
  kubeletOf(kube).write(serving?.metadata.name ?? '', 'serving\n')
  t.equal((await control.call('GET', `/applications/${app.id}/logs?tail=10`)).text, 'serving\n')
  t.equal((await control.call('DELETE', `/applications/${app.id}`)).status, 204)

  const events = kube.server.audit().filter((event) => event.user.username === kube.user)
  t.ok(events.length > 20, "the audit log holds the control plane's requests")
  const denied = events
    .filter((event) => event.responseStatus?.code === 403)
    .map((event) => `${event.verb} ${event.requestURI}`)
  t.same(denied, [], 'no request the control plane made was refused by RBAC')
  t.same(
    events
      .filter((event) => event.objectRef?.namespace !== kube.namespace)
      .map((event) => `${event.verb} ${event.requestURI}`),
    [],
    'all of them in its namespace',
  )
  for (const rule of role.rules) {
    for (const group of rule.apiGroups) {
      for (const resource of rule.resources) {
        for (const verb of rule.verbs) {
          // An apply that created its object (201) was authorized as create too.
          const used = events.some(
            (event) =>
              (event.objectRef?.apiGroup ?? '') === group &&
              resourceOf(event) === resource &&
              (event.verb === verb ||
                (verb === 'create' && event.verb === 'patch' && event.responseStatus?.code === 201)) &&
              (rule.resourceNames === undefined || rule.resourceNames.includes(event.objectRef?.name ?? '')),
          )
          t.ok(used, `the Role's ${verb} ${group === '' ? 'core' : group} ${resource} is used`)
        }
      }
    }
  }
})
