// The deployed application on the cluster: the SpinApp and the deployment read back from it,
// deploy again, invoke through the service proxy with the limits of control-plane.md §8,
// application logs, deleting everything, and a cluster without the SpinApp CRD. On the real API
// server (test/helpers/kube-apiserver.ts) with Kubernetes' own controllers and spin-operator,
// the node a stand-in (test/fixtures/kube-kubelet.ts): invoke answered by a function goes through
// the API server's own service proxy to the pod's IP, which the node network stand-in routes to
// the test's function server (test/fixtures/kube-real-endpoints.ts). A cluster without the CRD
// is a server of that test's own (CRDs are cluster-wide; the file's other tests share one).
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'
import t from 'tap'
import { servePods, untilEndpoints } from '../fixtures/kube-real-endpoints.js'
import type { App, TestControl } from '../helpers/control.js'
import { createApp, eachEngine, firstFunction, until } from '../helpers/control.js'
import type { RealClusterControl } from '../helpers/cluster.js'
import { IMAGE_SIZE, REPOSITORY, startRealClusterControl } from '../helpers/cluster.js'
import { ownKubeApiServer } from '../helpers/kube-apiserver.js'
import * as real from '../fixtures/kube-real.js'

// Each file starts its own API server, and every test a control plane on it.
t.setTimeout(300_000)

type Deployment = {
  image: string
  replicas: number
  observedReplicas: number
  ready: boolean
  namespace: string
  serviceName: string
  internalUrl: string
  publicUrl: string | null
  message: string
  conditions?: Array<{ type: string; status: string; reason: string }>
}

/** deployed() on the real API server. */
async function deployedReal(
  cluster: RealClusterControl,
  name = 'hello',
  readyPods?: number,
): Promise<{ app: App; image: string; buildId: string }> {
  const { control, kube } = cluster
  const app = await createApp(control, name)
  const build = (await control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
  const image = `${REPOSITORY}/${name}@sha256:${'b'.repeat(64)}`
  await real.succeedJob(kube, `build-${build.id}`, image)
  await until(() => cluster.finished.some((b) => b.id === build.id), 20_000, 'build finished and deployed')
  await until(
    async () =>
      (
        (await control.call('GET', `/applications/${app.id}/builds/${build.id}`)).body as {
          imageSizeBytes: number | null
        }
      ).imageSizeBytes !== null,
    20_000,
    'image measured',
  )
  await real.operateSpinApp(kube, name, readyPods)
  return { app, image, buildId: build.id }
}

/** The function's pods: echoes the request, or answers /big, /binary, /latin1, /slow, /unavailable as named. */
async function startFunction(t: Test): Promise<{ url: string; seen: IncomingMessage[] }> {
  const seen: IncomingMessage[] = []
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    seen.push(request)
    const chunks: Buffer[] = []
    request.on('data', (c: Buffer) => chunks.push(c))
    request.on('end', () => {
      const path = request.url ?? '/'
      if (path.startsWith('/big')) {
        response.writeHead(200, { 'content-type': 'text/plain' })
        response.end('x'.repeat(2 * 1024 * 1024))
      } else if (path.startsWith('/binary')) {
        response.writeHead(201, { 'content-type': 'application/octet-stream' })
        response.end(Buffer.from([0, 1, 2, 255]))
      } else if (path.startsWith('/latin1')) {
        response.writeHead(200, { 'content-type': 'text/plain; charset=iso-8859-1' })
        response.end(Buffer.from([0x63, 0x61, 0x66, 0xe9]))
      } else if (path.startsWith('/slow')) {
        // never answers
      } else if (path.startsWith('/unavailable')) {
        // What a HEAD of the API server's own "no endpoints" looks like too: 503, JSON, no body.
        response.writeHead(503, { 'content-type': 'application/json' })
        response.end(JSON.stringify({ busy: true }))
      } else {
        response.writeHead(418, { 'content-type': 'application/json', 'x-fn': ['a', 'b'] })
        response.end(
          JSON.stringify({
            method: request.method,
            url: path,
            headers: request.headers,
            body: Buffer.concat(chunks).toString('base64'),
          }),
        )
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

async function getDeployment(control: TestControl, appId: string): Promise<Deployment | null> {
  return ((await control.call('GET', `/applications/${appId}`)).body as { deployment: Deployment | null }).deployment
}

t.test(
  "an in-cluster registry: the SpinApp pulls the pushed digest by the nodes' name for the registry, with the pull Secret",
  async (t) => {
    const cluster = await startRealClusterControl(t, 'pglite', {
      flags: ['--image-pull-repository', 'localhost:30500/apps', '--image-pull-secret', 'registry-pull'],
    })
    await deployedReal(cluster)
    t.same((await cluster.kube.get(real.SPINAPP, 'hello'))?.spec, {
      image: `localhost:30500/apps/hello@sha256:${'b'.repeat(64)}`,
      executor: 'containerd-shim-spin',
      replicas: 1,
      enableAutoscaling: false,
      imagePullSecrets: [{ name: 'registry-pull' }],
    })
  },
)

eachEngine(
  t,
  'deployment: read from the SpinApp, its Deployment and Service; deploy re-applies the latest image',
  async (t, engine) => {
    const cluster = await startRealClusterControl(t, engine, {
      flags: ['--public-base-url', 'https://apps.example.com/', '--public-route', 'none', '--replicas', '2'],
    })
    const { control, kube } = cluster
    const fresh = await createApp(control, 'fresh')
    t.equal(await getDeployment(control, fresh.id), null, 'null until a build succeeds')
    const noBuild = await control.call('POST', `/applications/${fresh.id}/deploy`)
    t.equal(noBuild.status, 409)
    t.same(noBuild.body, { error: 'nothing to deploy: the application has no successful build yet' })

    const { app, image, buildId } = await deployedReal(cluster)
    const { conditions, ...ready } = (await getDeployment(control, app.id)) as Deployment
    t.match(conditions, [
      { type: 'Deployed', status: 'True', reason: 'Applied' },
      { type: 'Ready', status: 'True', reason: 'Answering', message: '2 of 2 replicas ready' },
    ])
    t.same(ready, {
      image,
      imageSizeBytes: IMAGE_SIZE,
      buildId,
      replicas: 2,
      observedReplicas: 2,
      ready: true,
      namespace: kube.namespace,
      serviceName: 'hello',
      internalUrl: `http://hello.${kube.namespace}.svc.cluster.local`,
      publicUrl: 'https://apps.example.com/hello/',
      message: '2 of 2 replicas ready',
    })
    await real.operateSpinApp(kube, 'hello', 1)
    t.match(await getDeployment(control, app.id), {
      ready: false,
      message: 'Deployment does not have minimum availability.',
    })

    // Deleted by hand while the control plane may not apply it again (the watch would at once).
    await real.setRoleVerb(kube, 'core.spinkube.dev', 'spinapps', 'patch', false)
    await kube.must('DELETE', kube.path(real.SPINAPP, 'hello'))
    await until(
      async () => (await getDeployment(control, app.id))?.conditions?.[0]?.status === 'False',
      20_000,
      'the put-back refused',
    )
    t.match(await getDeployment(control, app.id), { ready: false, observedReplicas: 0, message: /SpinApp is missing/ })
    await real.setRoleVerb(kube, 'core.spinkube.dev', 'spinapps', 'patch', true)
    const again = await control.call('POST', `/applications/${app.id}/deploy`)
    t.equal(again.status, 202)
    t.same(again.body, { message: `deploying ${image}` })
    const reapplied = await kube.get(real.SPINAPP, 'hello')
    t.match(reapplied, { spec: { image, replicas: 2, executor: 'containerd-shim-spin' } }, 're-applied')
    t.same(
      reapplied?.metadata.managedFields?.filter((f) => f.subresource !== 'status').map((f) => [f.manager, f.operation]),
      [['platform-control', 'Apply']],
      'by server-side apply',
    )
  },
)

eachEngine(
  t,
  'invoke on the real API server: its own answers when no pod is ready, and when the Service is gone',
  async (t, engine) => {
    const cluster = await startRealClusterControl(t, engine)
    const { control, kube } = cluster
    // Deployed, its Deployment and Service made, no pod running.
    const { app } = await deployedReal(cluster, 'hello', 0)
    const invokePath = `/applications/${app.id}/functions/${firstFunction(app).id}/invoke`
    for (const method of ['GET', 'HEAD']) {
      const noPod = await control.call('POST', invokePath, { json: { method, path: '/' } })
      t.same(
        [noPod.status, noPod.body],
        [503, { error: 'application unreachable: no pod of it is ready' }],
        `${method}: a Service without endpoints`,
      )
    }
    // The proxy answers "no endpoints" for a Service that does not exist too: it never reads it.
    // spin-operator would restore the Service at once; frozen, it is a cluster whose operator is down.
    const thaw = kube.server.pauseOperator()
    t.teardown(thaw)
    // A write the operator sent just before it froze may still land and make the Service again:
    // deleted until a read finds it gone.
    do await kube.server.admin('DELETE', kube.path(real.SERVICE, 'hello'))
    while ((await kube.get(real.SERVICE, 'hello')) !== undefined)
    for (const method of ['GET', 'HEAD']) {
      const gone = await control.call('POST', invokePath, { json: { method, path: '/' } })
      t.same(
        [gone.status, gone.body],
        [404, { error: 'application is not deployed: its Service does not exist' }],
        `${method}: no Service`,
      )
    }
  },
)

eachEngine(t, 'deployment: a cluster without the SpinApp CRD, and one gone away', async (t, engine) => {
  // Removing a CRD takes it from the whole cluster: this test's own server, not the file's.
  const server = await ownKubeApiServer(t)
  const cluster = await startRealClusterControl(t, engine, { server, proxy: true })
  const { control, kube, proxy } = cluster
  const { app, image } = await deployedReal(cluster)
  const crd = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/spinapps.core.spinkube.dev'
  await kube.must('DELETE', crd)
  // Its SpinApps deleted first, then the CRD itself, then the resource is no longer served (the
  // group stays: SpinAppExecutors are in it).
  await until(
    async () =>
      (await server.admin('GET', crd)).status === 404 &&
      (await server.admin('GET', '/apis/core.spinkube.dev/v1alpha1/spinapps')).status === 404,
    60_000,
    'the SpinApp CRD removed',
  )
  const noCrd = await control.call('POST', `/applications/${app.id}/deploy`)
  t.equal(noCrd.status, 503)
  t.same(noCrd.body, {
    error: 'the SpinApp custom resource definition (core.spinkube.dev/v1alpha1) is not installed in the cluster',
  })
  t.match(
    await getDeployment(control, app.id),
    { ready: false, message: /custom resource definition .* is not installed/ },
    'GET application still answers',
  )

  proxy!.pause()
  t.match(
    await getDeployment(control, app.id),
    { image, ready: false, message: 'cluster unreachable' },
    'and with the cluster down',
  )
  t.equal((await control.call('POST', `/applications/${app.id}/deploy`)).status, 503)
})

eachEngine(
  t,
  'invoke: through the service proxy, the envelope, base64, limits, timeout, headers not forwarded',
  async (t, engine) => {
    const cluster = await startRealClusterControl(t, engine, { flags: ['--invoke-timeout', '300ms'] })
    const { control, kube } = cluster
    // The pod's container is the test's function server, at the pod's IP on the node network:
    // the API server's proxy picks it from the EndpointSlices and dials it there.
    const { app } = await deployedReal(cluster)
    const fn = firstFunction(app)
    const invokePath = `/applications/${app.id}/functions/${fn.id}/invoke`
    const fnServer = await startFunction(t)
    await servePods(kube, 'hello', fnServer.url)
    await untilEndpoints(kube, 'hello', 1)
    const headBusy = await control.call('POST', invokePath, { json: { method: 'HEAD', path: '/unavailable' } })
    t.match(
      headBusy.body,
      { status: 503, body: '', truncated: false },
      "a function's own 503 to a HEAD, with a pod ready, is its answer",
    )
    const echo = await control.call('POST', invokePath, {
      token: 'caller-secret',
      json: {
        method: 'PUT',
        path: '/items/7?x=1&y=%20',
        headers: {
          'X-Custom': ['one', 'two'],
          Connection: ['x-hop'],
          'X-Hop': ['gone'],
          'Keep-Alive': ['timeout=5'],
          'Impersonate-User': ['admin'],
          Authorization: ['Bearer caller-secret'],
        },
        body: 'aGVsbG8=',
        bodyIsBase64: true,
      },
    })
    t.equal(echo.status, 200, 'the envelope is always 200')
    const result = echo.body as {
      status: number
      headers: Record<string, string[]>
      body: string
      bodyIsBase64: boolean
      truncated: boolean
      durationMs: number
    }
    t.equal(result.status, 418, "the function's status inside")
    t.same(result.headers['x-fn'], ['a', 'b'])
    t.equal(result.bodyIsBase64, false, 'JSON is text')
    t.equal(result.truncated, false)
    t.ok(result.durationMs >= 0)
    const seen = JSON.parse(result.body) as {
      method: string
      url: string
      headers: Record<string, string>
      body: string
    }
    t.equal(seen.method, 'PUT')
    t.equal(seen.url, '/items/7?x=1&y=%20', 'path and query as sent')
    t.equal(Buffer.from(seen.body, 'base64').toString(), 'hello', 'the base64 body decoded')
    t.equal(seen.headers['x-custom'], 'one, two')
    for (const header of ['authorization', 'x-hop', 'keep-alive', 'impersonate-user'])
      t.notOk(header in seen.headers, `${header} not forwarded`)

    const binary = (await control.call('POST', invokePath, { json: { method: 'GET', path: '/binary' } }))
      .body as typeof result
    t.match(binary, {
      status: 201,
      body: Buffer.from([0, 1, 2, 255]).toString('base64'),
      bodyIsBase64: true,
      truncated: false,
    })
    const latin = (await control.call('POST', invokePath, { json: { method: 'GET', path: '/latin1' } }))
      .body as typeof result
    t.match(
      latin,
      { status: 200, body: Buffer.from([0x63, 0x61, 0x66, 0xe9]).toString('base64'), bodyIsBase64: true },
      'text, but not UTF-8: base64',
    )
    const bigReply = await control.call('POST', invokePath, { json: { method: 'GET', path: '/big' } })
    t.equal(bigReply.status, 200, bigReply.text.slice(0, 200))
    const big = bigReply.body as typeof result
    t.equal(big.truncated, true, 'cut at 1 MiB')
    t.equal(big.body.length, 1024 * 1024)
    const slow = await control.call('POST', invokePath, { json: { method: 'GET', path: '/slow' } })
    t.equal(slow.status, 200)
    t.match(slow.body, { status: 504, body: 'the function did not answer within 300ms', truncated: false })

    const maxBody = Buffer.alloc(1024 * 1024, 1).toString('base64')
    t.equal(
      (
        await control.call('POST', invokePath, {
          json: { method: 'POST', path: '/', body: maxBody, bodyIsBase64: true },
        })
      ).status,
      200,
      'a body of exactly 1 MiB passes, base64 too',
    )
    const tooBig = await control.call('POST', invokePath, {
      json: { method: 'POST', path: '/', body: 'x'.repeat(1024 * 1024 + 1) },
    })
    t.equal(tooBig.status, 413)
    t.same(tooBig.body, { error: 'invoke body too large: 1048577 bytes (UTF-8), at most 1048576' })
    t.equal(
      (
        await control.call('POST', invokePath, {
          json: { method: 'POST', path: '/', body: 'not base64!', bodyIsBase64: true },
        })
      ).status,
      400,
    )

    const api = (
      await control.call('POST', `/applications/${app.id}/functions`, { json: { name: 'api', route: '/api/...' } })
    ).body as { id: string }
    const apiPath = `/applications/${app.id}/functions/${api.id}/invoke`
    t.equal(
      (
        (await control.call('POST', apiPath, { json: { method: 'GET', path: '/api/users?id=1' } }))
          .body as typeof result
      ).status,
      418,
      'a path under the route',
    )
    const outside = await control.call('POST', apiPath, { json: { method: 'GET', path: '/other' } })
    t.equal(outside.status, 400)
    t.same(outside.body, { error: "path /other is not one this function's route /api/... takes" })

    await real.setRoleVerb(kube, '', 'services/proxy', 'create', false)
    const forbidden = await control.call('POST', invokePath, { json: { method: 'POST', path: '/' } })
    t.same(forbidden.body, { error: 'cluster permission missing: the control plane may not create services/proxy' })
    await real.setRoleVerb(kube, '', 'services/proxy', 'create', true)
    t.ok(
      kube.server.network.dialed().some((address) => address.startsWith('10.244.')),
      "the API server's proxy dialed the pod's IP",
    )
    t.notOk(control.logText().includes('caller-secret'), "the caller's token is never logged")

    // In the cluster, invoke goes straight to the Service, not through the API server.
    const client = control.server.cluster!.kube
    client.inCluster = true
    client.serviceUrl = (name) => (name === 'hello' ? fnServer.url : 'http://127.0.0.1:1')
    const proxyRequests = (): number =>
      kube.server
        .audit()
        .filter((event) => event.objectRef?.namespace === kube.namespace && event.objectRef.subresource === 'proxy')
        .length
    const proxied = proxyRequests()
    const straight = (
      await control.call('POST', invokePath, {
        json: {
          method: 'POST',
          path: '/direct?q=1',
          headers: { authorization: ['Bearer caller-secret'], 'x-custom': ['yes'] },
          body: 'hi',
        },
      })
    ).body as typeof result
    t.equal(straight.status, 418)
    const direct = JSON.parse(straight.body) as {
      method: string
      url: string
      headers: Record<string, string>
      body: string
    }
    t.match(direct, { method: 'POST', url: '/direct?q=1', headers: { 'x-custom': 'yes' } })
    t.equal(Buffer.from(direct.body, 'base64').toString(), 'hi')
    t.notOk('authorization' in direct.headers, 'no Authorization on the direct path either')
    t.equal(proxyRequests(), proxied, 'no service proxy request')
    t.match(
      (await control.call('POST', invokePath, { json: { method: 'GET', path: '/slow' } })).body,
      { status: 504 },
      'the timeout on the direct path',
    )
    fnServer.seen.length = 0
    client.serviceUrl = () => 'http://127.0.0.1:1'
    const unreachable = await control.call('POST', invokePath, { json: { method: 'GET', path: '/' } })
    t.equal(unreachable.status, 503)
    t.same(unreachable.body, { error: 'application unreachable' })
    client.inCluster = false
    t.notOk(control.logText().includes(kube.token), 'nor the cluster token')
  },
)

eachEngine(t, "application logs: the running pod's log with tail and follow", async (t, engine) => {
  const cluster = await startRealClusterControl(t, engine)
  const { control, kube } = cluster
  const kubelet = real.kubeletOf(kube)
  const quiet = await createApp(control, 'quiet')
  t.equal((await control.call('GET', `/applications/${quiet.id}/logs`)).status, 404, 'no pod yet')
  const { app } = await deployedReal(cluster)
  // The pod the ReplicaSet controller made for spin-operator's Deployment.
  const pod = ((await kubelet.pods('core.spinkube.dev/app-name=hello'))[0] as real.RealObject).metadata.name
  kubelet.write(pod, 'one\ntwo\nthree\n')
  const all = await control.call('GET', `/applications/${app.id}/logs`)
  t.equal(all.status, 200)
  t.match(all.headers.get('content-type'), /^text\/plain/)
  t.equal(all.text, 'one\ntwo\nthree\n')
  t.equal((await control.call('GET', `/applications/${app.id}/logs?tail=2`)).text, 'two\nthree\n')

  const response = await fetch(`${control.url}/api/v1/applications/${app.id}/logs?follow=true&tail=1`)
  const reader = response.body!.getReader()
  t.equal(Buffer.from((await reader.read()).value).toString(), 'three\n')
  await until(() => kubelet.followers(pod) === 1, 20_000, 'the API server following the kubelet')
  kubelet.write(pod, 'four\n')
  t.equal(Buffer.from((await reader.read()).value).toString(), 'four\n', 'followed')
  await kube.must('DELETE', kube.path(real.POD, pod))
  await reader.cancel()
})

eachEngine(
  t,
  'deleting an application removes its SpinApp and what it owns, and its build Jobs and Secrets',
  async (t, engine) => {
    const cluster = await startRealClusterControl(t, engine)
    const { control, kube } = cluster
    const { app } = await deployedReal(cluster)
    const other = await deployedReal(cluster, 'other')
    const pending = (await control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
    t.ok(
      (await kube.get(real.JOB, `build-${pending.id}`)) && (await kube.get(real.SECRET, `build-${pending.id}`)),
      'a build in progress',
    )
    await real.setRoleVerb(kube, 'core.spinkube.dev', 'spinapps', 'delete', false)
    const refused = await control.call('DELETE', `/applications/${app.id}`)
    t.equal(refused.status, 503)
    t.same(refused.body, {
      error: 'cluster permission missing: the control plane may not delete core.spinkube.dev spinapps',
    })
    t.equal(
      (await control.call('GET', `/applications/${app.id}`)).status,
      200,
      'nothing deleted when the cluster refuses',
    )
    await real.setRoleVerb(kube, 'core.spinkube.dev', 'spinapps', 'delete', true)

    const appPods = (await kube.list(real.POD, 'core.spinkube.dev/app-name=hello')).map((pod) => pod.metadata.name)
    const replicaSet = (await kube.list(real.REPLICASET, 'core.spinkube.dev/app-name=hello'))[0]?.metadata.name ?? ''
    const buildPod = (await real.podOfJob(kube, `build-${pending.id}`)).metadata.name
    t.equal((await control.call('DELETE', `/applications/${app.id}`)).status, 204)
    t.equal(await kube.get(real.SPINAPP, 'hello'), undefined, 'SpinApp gone')
    // What Kubernetes' garbage collector then deletes, from the owner references.
    const gone = await real.collected(kube, [
      [real.DEPLOYMENT, 'hello'],
      [real.REPLICASET, replicaSet],
      [real.SERVICE, 'hello'],
      ...appPods.map((name): [real.Kind, string] => [real.POD, name]),
    ])
    t.same(
      gone,
      [
        'deployments/hello',
        ...appPods.map((name) => `pods/${name}`),
        `replicasets/${replicaSet}`,
        'services/hello',
      ].sort(),
      'its Deployment, ReplicaSet, Service and pods go with it',
    )
    t.same(
      await real.collected(kube, [[real.POD, buildPod]]),
      [`pods/${buildPod}`],
      "and the pod of its build's Job, which the control plane deleted",
    )
    const ofApp = (objects: real.RealObject[]): real.RealObject[] =>
      objects.filter((o) => o.metadata.labels?.['platform.wasmkube.dev/application'] === app.id)
    t.same(ofApp(await kube.list(real.JOB)), [], 'its build Jobs gone')
    t.same(ofApp(await kube.list(real.SECRET)), [], 'its Secrets gone')
    t.equal((await control.call('GET', `/applications/${app.id}`)).status, 404)
    t.ok(await kube.get(real.SPINAPP, 'other'), 'another application untouched')
    t.equal((await kube.list(real.POD, 'core.spinkube.dev/app-name=other')).length, 1, 'and its pod')
    t.equal((await control.call('GET', `/applications/${other.app.id}`)).status, 200)
  },
)
