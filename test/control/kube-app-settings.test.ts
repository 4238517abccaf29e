// Application settings on the real Kubernetes API server (test/helpers/kube-apiserver.ts, the
// control plane with exactly the Role from deploy/): the SpinApp carries replicas, resources and
// variables (a value, or valueFrom a Secret); secret values go to a Secret the control plane
// owns; autoscaling is an HPA the SpinApp owns; the public route is an HTTPRoute or an Ingress
// the SpinApp owns; all of it goes with the application (the SpinApp's by the garbage
// collector, which the test plays from the owner references). A PATCH of a deployed application
// re-applies at once, a rebuild keeps the settings, a tightened policy holds from the next
// deploy, a Role without patch leaves the settings saved and says so, and no secret value
// reaches a log. A cluster without the Gateway API is a server of that test's own (CRDs are
// cluster-wide; the file's other tests share one).
import t from 'tap'
import type { RealObject } from '../fixtures/kube-real.js'
import {
  collected,
  HPA,
  HTTPROUTE,
  INGRESS,
  operateSpinApp,
  SECRET as SECRETS,
  setRoleVerb,
  SPINAPP,
  succeedJob,
} from '../fixtures/kube-real.js'
import { IMAGE_SIZE, REPOSITORY, startRealClusterControl } from '../helpers/cluster.js'
import { ownKubeApiServer } from '../helpers/kube-apiserver.js'
import type { RealClusterControl } from '../helpers/cluster.js'
import { createApp, eachEngine, until } from '../helpers/control.js'
import type { TestControl } from '../helpers/control.js'

// Each file starts its own API server (seconds, more on a loaded machine) and every test a
// control plane on it.
t.setTimeout(300_000)

const SECRET = 'correct-horse-battery-staple-7f3a'
const ENCODED = Buffer.from(SECRET).toString('base64')

async function build(cluster: RealClusterControl, appId: string, name: string, digest: string): Promise<string> {
  const { control, kube } = cluster
  const started = (await control.call('POST', `/applications/${appId}/builds`)).body as { id: string }
  const image = `${REPOSITORY}/${name}@sha256:${digest.repeat(64)}`
  await succeedJob(kube, `build-${started.id}`, image)
  // Told after the deploy (SpinApp, then what it owns) has been applied.
  await until(() => cluster.finished.some((b) => b.id === started.id), 20_000, `build ${started.id} deployed`)
  if (((await kube.get(SPINAPP, name))?.spec as { image?: string } | undefined)?.image !== image)
    throw new Error(`the SpinApp is not on ${image}`)
  return image
}

async function patch(
  control: TestControl,
  appId: string,
  json: unknown,
): Promise<{
  status: number
  body: { deployment: { message: string; publicUrl: string | null } | null; error?: string } & Record<string, unknown>
}> {
  const reply = await control.call('PATCH', `/applications/${appId}`, { json })
  return { status: reply.status, body: reply.body as never }
}

const owner = (object: RealObject | undefined): unknown =>
  object?.metadata.ownerReferences?.map(({ kind, name, uid }) => ({ kind, name, uid }))
const specOf = async (cluster: RealClusterControl, name: string): Promise<Record<string, unknown>> =>
  (await cluster.kube.get(SPINAPP, name))?.spec as Record<string, unknown>

eachEngine(
  t,
  'the SpinApp, its Secret, HPA and HTTPRoute follow the settings, and go with the application',
  async (t, engine) => {
    const cluster = await startRealClusterControl(t, engine, {
      flags: ['--public-base-url', 'https://fn.example.com/', '--gateway', 'gateways/public', '--replicas', '2'],
    })
    const { control, kube } = cluster
    const app = await createApp(control, 'hello')

    const configured = await patch(control, app.id, {
      replicas: 3,
      resources: { cpuRequest: '100m', cpuLimit: '500m', memoryLimit: '128Mi' },
      variables: {
        greeting: { value: 'hi' },
        token: { secret: SECRET },
        db_password: { secretRef: { name: 'db', key: 'password' } },
      },
    })
    t.equal(configured.status, 200)
    t.equal(configured.body.deployment, null, 'nothing deployed yet')
    const secret = await kube.get(SECRETS, 'hello-variables')
    t.same(secret?.data, { token: ENCODED }, "the secret value is in the application's Secret")
    t.match(secret?.metadata.labels, {
      'app.kubernetes.io/managed-by': 'platform-control',
      'platform.wasmkube.dev/application': app.id,
    })

    const first = await build(cluster, app.id, 'hello', 'b')
    const spinApp = await kube.get(SPINAPP, 'hello')
    t.same(spinApp?.spec, {
      image: first,
      executor: 'containerd-shim-spin',
      replicas: 3,
      // The CRD's default.
      enableAutoscaling: false,
      resources: { limits: { cpu: '500m', memory: '128Mi' }, requests: { cpu: '100m' } },
      variables: [
        { name: 'db_password', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } },
        { name: 'greeting', value: 'hi' },
        { name: 'token', valueFrom: { secretKeyRef: { name: 'hello-variables', key: 'token' } } },
      ],
    })
    const route = await kube.get(HTTPROUTE, 'hello')
    t.same(
      owner(route),
      [{ kind: 'SpinApp', name: 'hello', uid: spinApp?.metadata.uid }],
      'the HTTPRoute is owned by the SpinApp',
    )
    t.same(route?.spec, {
      // With the Gateway API CRD's defaults: the Gateway kind and group, the Service kind, weight 1.
      parentRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'public', namespace: 'gateways' }],
      hostnames: ['fn.example.com'],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/hello' } }],
          filters: [
            { type: 'URLRewrite', urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/' } } },
          ],
          backendRefs: [{ group: '', kind: 'Service', name: 'hello', port: 80, weight: 1 }],
        },
      ],
    })
    await operateSpinApp(kube, 'hello')
    await until(
      async () =>
        (
          (await control.call('GET', `/applications/${app.id}`)).body as {
            builds: Array<{ imageSizeBytes: number | null }>
          }
        ).builds[0]?.imageSizeBytes !== null,
      20_000,
      'image measured',
    )
    t.match(
      (await control.call('GET', `/applications/${app.id}`)).body,
      {
        builds: [{ imageSizeBytes: IMAGE_SIZE }],
        deployment: {
          replicas: 3,
          publicUrl: 'https://fn.example.com/hello/',
          ready: true,
          imageSizeBytes: IMAGE_SIZE,
        },
      },
      'the image size is on the build and the deployment',
    )

    const scaled = await patch(control, app.id, {
      autoscaling: { minReplicas: 2, maxReplicas: 6, targetCpuPercent: 60 },
    })
    t.equal(scaled.status, 200)
    t.match(
      scaled.body.deployment?.message,
      /^re-applied with the new settings; /,
      'a deployed application gets the change at once, and says so',
    )
    t.notOk('replicas' in (await specOf(cluster, 'hello')), 'autoscaled: no replicas (spin-operator refuses both)')
    t.equal((await specOf(cluster, 'hello')).enableAutoscaling, true)
    const hpa = await kube.get(HPA, 'hello')
    t.same(
      owner(hpa),
      [{ kind: 'SpinApp', name: 'hello', uid: spinApp?.metadata.uid }],
      'the HPA is owned by the SpinApp',
    )
    t.same(hpa?.spec, {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'hello' },
      minReplicas: 2,
      maxReplicas: 6,
      metrics: [
        { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 60 } } },
      ],
    })

    const kept = await patch(control, app.id, {
      autoscaling: null,
      variables: { token: { secret: true }, greeting: { value: 'hello again' } },
    })
    t.equal(kept.status, 200)
    t.equal(await kube.get(HPA, 'hello'), undefined, 'autoscaling off: the HPA is deleted')
    t.same((await kube.get(SECRETS, 'hello-variables'))?.data, { token: ENCODED }, '{"secret": true} kept the value')
    t.notOk(
      kube.server
        .audit()
        .some(
          (a) =>
            a.user.username === kube.user &&
            a.objectRef?.resource === 'secrets' &&
            (a.verb === 'get' || a.verb === 'list'),
        ),
      'without ever reading a Secret',
    )
    t.same(kept.body.variables, { token: { secret: true }, greeting: { value: 'hello again' } })

    const second = await build(cluster, app.id, 'hello', 'c')
    t.match(
      await specOf(cluster, 'hello'),
      { image: second, replicas: 3, variables: [{ name: 'greeting', value: 'hello again' }, { name: 'token' }] },
      'a rebuild keeps replicas and variables',
    )

    t.equal(
      (await patch(control, app.id, { autoscaling: { minReplicas: 1, maxReplicas: 2, targetCpuPercent: 80 } })).status,
      200,
    )
    t.ok(await kube.get(HPA, 'hello'), 'autoscaling on again')
    t.equal((await control.call('DELETE', `/applications/${app.id}`)).status, 204)
    t.equal(await kube.get(SPINAPP, 'hello'), undefined, 'SpinApp gone')
    t.same(
      await collected(kube, [
        [HPA, 'hello'],
        [HTTPROUTE, 'hello'],
      ]),
      ['horizontalpodautoscalers/hello', 'httproutes/hello'],
      'its HPA and HTTPRoute go with it (owned by the deleted SpinApp)',
    )
    t.equal(await kube.get(SECRETS, 'hello-variables'), undefined, "the variables' Secret gone")

    const logs = control.logText()
    t.ok(logs.length > 0, 'logs were captured')
    t.notMatch(logs, SECRET, 'the secret value is in no log line')
    t.notMatch(logs, ENCODED, 'nor its base64')
  },
)

t.test("an application's Secret without any build goes with the application", async (t) => {
  const { control, kube } = await startRealClusterControl(t, 'pglite')
  const app = await createApp(control, 'quiet')
  t.equal(
    (await patch(control, app.id, { variables: { token: { secret: SECRET }, other: { secret: 'x' } } })).status,
    200,
  )
  t.same(Object.keys((await kube.get(SECRETS, 'quiet-variables'))?.data ?? {}).sort(), ['other', 'token'])
  t.equal((await patch(control, app.id, { variables: { token: { secret: true } } })).status, 200)
  t.same(
    (await kube.get(SECRETS, 'quiet-variables'))?.data,
    { token: ENCODED },
    'a secret variable no longer given is removed from the Secret, a kept one stays',
  )
  t.equal((await control.call('DELETE', `/applications/${app.id}`)).status, 204)
  t.equal(await kube.get(SECRETS, 'quiet-variables'), undefined)
})

t.test('Ingress routes: host-based, and path-based with the ingress-nginx rewrite', async (t) => {
  const hosts = await startRealClusterControl(t, 'pglite', {
    flags: ['--public-base-url', 'https://*.fn.example.com', '--public-route', 'ingress', '--ingress-class', 'nginx'],
  })
  const app = await createApp(hosts.control, 'hello')
  await build(hosts, app.id, 'hello', 'b')
  const ingress = await hosts.kube.get(INGRESS, 'hello')
  t.same(owner(ingress), [
    { kind: 'SpinApp', name: 'hello', uid: (await hosts.kube.get(SPINAPP, 'hello'))?.metadata.uid },
  ])
  t.same(ingress?.spec, {
    ingressClassName: 'nginx',
    rules: [
      {
        host: 'hello.fn.example.com',
        http: {
          paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'hello', port: { number: 80 } } } }],
        },
      },
    ],
  })
  t.equal(await hosts.kube.get(HTTPROUTE, 'hello'), undefined, 'no HTTPRoute')
  t.match((await hosts.control.call('GET', `/applications/${app.id}`)).body, {
    deployment: { publicUrl: 'https://hello.fn.example.com/' },
  })

  const paths = await startRealClusterControl(t, 'pglite', {
    flags: ['--public-base-url', 'https://fn.example.com/apps', '--public-route', 'ingress'],
  })
  const other = await createApp(paths.control, 'shop')
  await build(paths, other.id, 'shop', 'd')
  const rewritten = await paths.kube.get(INGRESS, 'shop')
  t.same(rewritten?.metadata.annotations, {
    'nginx.ingress.kubernetes.io/use-regex': 'true',
    'nginx.ingress.kubernetes.io/rewrite-target': '/$2',
  })
  t.same(rewritten?.spec, {
    rules: [
      {
        host: 'fn.example.com',
        http: {
          paths: [
            {
              path: '/apps/shop(/|$)(.*)',
              pathType: 'ImplementationSpecific',
              backend: { service: { name: 'shop', port: { number: 80 } } },
            },
          ],
        },
      },
    ],
  })
  t.match((await paths.control.call('GET', `/applications/${other.id}`)).body, {
    deployment: { publicUrl: 'https://fn.example.com/apps/shop/' },
  })
})

t.test('policy: max and forced hold at PATCH, and again at deploy after the policy tightens', async (t) => {
  const open = await startRealClusterControl(t, 'pglite')
  const app = await createApp(open.control, 'hello')
  t.equal(
    (await patch(open.control, app.id, { resources: { cpuLimit: '2', memoryRequest: '256Mi', memoryLimit: '512Mi' } }))
      .status,
    200,
  )
  await build(open, app.id, 'hello', 'b')
  t.same((await specOf(open, 'hello')).resources, {
    limits: { cpu: '2', memory: '512Mi' },
    requests: { memory: '256Mi' },
  })
  await open.control.close()

  // The same database and cluster, the control plane restarted under a tighter policy.
  const max = await startRealClusterControl(t, 'pglite', {
    kube: open.kube,
    store: open.control.store,
    flags: ['--resource-policy', 'max', '--resource-cpu-limit', '1', '--resource-memory-limit', '256Mi'],
  })
  const refused = await patch(max.control, app.id, { resources: { cpuLimit: '2' } })
  t.same(refused, { status: 400, body: { error: "resources.cpuLimit: 2 is above the platform's maximum 1" } })
  t.equal((await max.control.call('POST', `/applications/${app.id}/deploy`)).status, 202)
  t.same(
    (await specOf(max, 'hello')).resources,
    { limits: { cpu: '1', memory: '256Mi' }, requests: { memory: '256Mi' } },
    'the deploy lowered the old values to the caps, and the request to its lowered limit',
  )
  t.match(
    (await max.control.call('GET', `/applications/${app.id}`)).body,
    { resources: { cpuLimit: '1', memoryRequest: '256Mi', memoryLimit: '256Mi' } },
    'the answer shows the values in force',
  )
  await max.control.close()

  const forced = await startRealClusterControl(t, 'pglite', {
    kube: open.kube,
    store: open.control.store,
    flags: ['--resource-policy', 'forced', '--resource-cpu-request', '50m', '--resource-cpu-limit', '250m'],
  })
  const replaced = await patch(forced.control, app.id, { resources: { cpuRequest: '1', cpuLimit: '2' } })
  t.equal(replaced.status, 200)
  t.match(replaced.body, { resources: { cpuRequest: '50m', cpuLimit: '250m' } })
  t.same(
    (await specOf(forced, 'hello')).resources,
    { limits: { cpu: '250m' }, requests: { cpu: '50m' } },
    "forced: the platform's values, re-applied at once",
  )
})

t.test('a cluster without the Gateway API: deploy answers 503 saying what to install or set', async (t) => {
  // Removing a CRD takes it from the whole cluster: this test's own server, not the file's.
  const server = await ownKubeApiServer(t)
  const crd = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/httproutes.gateway.networking.k8s.io'
  t.equal((await server.admin('DELETE', crd)).status, 200)
  await until(
    async () =>
      (await server.admin('GET', crd)).status === 404 &&
      (await server.admin('GET', '/apis/gateway.networking.k8s.io/v1/httproutes')).status === 404,
    60_000,
    'the HTTPRoute CRD removed',
  )
  const cluster = await startRealClusterControl(t, 'pglite', {
    server,
    flags: ['--public-base-url', 'https://fn.example.com', '--gateway', 'public'],
  })
  const app = await createApp(cluster.control, 'hello')
  const started = (await cluster.control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
  await succeedJob(cluster.kube, `build-${started.id}`, `${REPOSITORY}/hello@sha256:${'b'.repeat(64)}`)
  await until(() => cluster.finished.length === 1, 20_000, 'build finished')
  const deploy = await cluster.control.call('POST', `/applications/${app.id}/deploy`)
  t.equal(deploy.status, 503)
  t.same(deploy.body, {
    error:
      'the cluster does not serve gateway.networking.k8s.io/v1 httproutes: install the Gateway API CRDs, or set --public-route ingress or none',
  })
})

t.test(
  'a deployed application whose cluster refuses the re-apply: the settings are saved and the answer says they are not applied yet',
  async (t) => {
    const cluster = await startRealClusterControl(t, 'pglite')
    const { control, kube } = cluster
    const app = await createApp(control, 'hello')
    await build(cluster, app.id, 'hello', 'b')
    // The Role without patch on SpinApps, as an operator might have it.
    await setRoleVerb(kube, 'core.spinkube.dev', 'spinapps', 'patch', false)
    const refused = await patch(control, app.id, { replicas: 4 })
    t.equal(refused.status, 200)
    t.equal(refused.body.replicas, 4, 'saved')
    t.match(
      refused.body.deployment?.message,
      /^saved but not applied \(cluster permission missing: the control plane may not patch core\.spinkube\.dev spinapps\); retried with back-off, or POST deploy applies them now; /,
    )
    await setRoleVerb(kube, 'core.spinkube.dev', 'spinapps', 'patch', true)
    t.equal((await control.call('POST', `/applications/${app.id}/deploy`)).status, 202)
    t.equal((await specOf(cluster, 'hello')).replicas, 4, 'the next deploy applies them')
  },
)
