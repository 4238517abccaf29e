// Replicas that agree on builds. A replica's resync must not fail a build whose Job another
// replica is still creating: the database records whether the Job was created, not one
// process's memory. A second build watcher on the same database stands for the other replica.
// On the real API server (test/helpers/kube-apiserver.ts): a validating admission webhook of the
// test holds the Job's creation, and the other replica reaches the API server through a TCP
// proxy the test cuts, so its watch breaks and it lists again.
import { readFileSync, writeFileSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { startBuildWatcher } from '@session-relay/control/cluster/build-watcher'
import { connectKube } from '@session-relay/control/cluster/kube'
import { createLogger } from '@session-relay/control/logger'
import { buildStatus, finishBuild, JOB_CREATION_GRACE_SECONDS } from '@session-relay/control/store/builds'
import type { RealCluster } from '../fixtures/kube-real.js'
import { JOB, succeedJob } from '../fixtures/kube-real.js'
import { startRealClusterControl, tempDir } from '../helpers/cluster.js'
import type { RealClusterControl } from '../helpers/cluster.js'
import { createApp, until } from '../helpers/control.js'
import { cuttableProxy } from '../helpers/tcp-proxy.js'
import type { CuttableProxy } from '../helpers/tcp-proxy.js'
import { selfSignedCertificate } from '../helpers/tls.js'

const ENGINE = 'pglite'

t.setTimeout(300_000)

const watches = (kube: RealCluster): number =>
  kube.server
    .audit()
    .filter((a) => a.user.username === kube.user && a.objectRef?.resource === 'jobs' && a.verb === 'watch').length

/** Another replica's build watcher: same cluster (through a proxy the test can cut), same database, memory of its own. */
async function otherReplica(t: Test, cluster: RealClusterControl): Promise<CuttableProxy> {
  const { kube } = cluster
  const proxy = await cuttableProxy(t, Number(new URL(kube.server.url).port))
  const kubeconfig = join(tempDir(t), 'kubeconfig-other.yaml')
  writeFileSync(
    kubeconfig,
    readFileSync(kube.kubeconfig, 'utf8').replace(kube.server.url, `https://127.0.0.1:${proxy.port}`),
  )
  const client = connectKube(cluster.control.config, { kind: 'file', path: kubeconfig })
  const watcher = startBuildWatcher({
    kube: client,
    db: cluster.control.server.db,
    logger: createLogger('silent'),
    finish: async (id, outcome) => {
      await finishBuild(cluster.control.server.db, id, outcome)
    },
    retryMs: 20,
  })
  t.teardown(() => watcher.close())
  await watcher.ready
  return proxy
}

/**
 * A validating admission webhook for Job creation in the namespace: each create waits for
 * `held` (a dry run is answered at once, which is how the test knows the API server calls it).
 */
async function holdJobCreation(t: Test, kube: RealCluster, held: Promise<void>): Promise<{ arrived: () => boolean }> {
  const { certPath, keyPath, certPem } = await selfSignedCertificate(t)
  let arrived = false
  let probed = false
  const server = createHttpsServer(
    { cert: readFileSync(certPath), key: readFileSync(keyPath) },
    (request: IncomingMessage, response: ServerResponse) => {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          request: { uid: string; dryRun?: boolean }
        }
        const answer = (): void => {
          response.writeHead(200, { 'content-type': 'application/json' })
          response.end(
            JSON.stringify({
              apiVersion: 'admission.k8s.io/v1',
              kind: 'AdmissionReview',
              response: { uid: review.request.uid, allowed: true },
            }),
          )
        }
        if (review.request.dryRun === true) {
          probed = true
          answer()
          return
        }
        arrived = true
        void held.then(answer)
      })
    },
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const name = `hold-jobs-${kube.namespace}`
  t.teardown(async () => {
    await kube.server.admin('DELETE', `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${name}`)
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  await kube.must('POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name },
    webhooks: [
      {
        name: 'hold.jobs.test.local',
        clientConfig: {
          url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/`,
          caBundle: Buffer.from(certPem).toString('base64'),
        },
        rules: [{ operations: ['CREATE'], apiGroups: ['batch'], apiVersions: ['v1'], resources: ['jobs'] }],
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': kube.namespace } },
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        timeoutSeconds: 30,
        failurePolicy: 'Fail',
      },
    ],
  })
  // The API server takes the configuration from an informer: probe with dry runs until it calls.
  const probe = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'probe' },
    spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'probe', image: 'probe' }] } } },
  }
  await until(
    async () => {
      await kube.must('POST', `${kube.path(JOB)}?dryRun=All`, probe)
      return probed
    },
    20_000,
    'the webhook to be called',
  )
  return { arrived: () => arrived }
}

t.test("a build whose Job one replica is still creating is not failed by the other's resync", async (t) => {
  const cluster = await startRealClusterControl(t, ENGINE)
  const { control, kube } = cluster
  const proxy = await otherReplica(t, cluster)
  const app = await createApp(control, 'hello')

  // Hold the Job's creation until the other replica has listed the Jobs again.
  let release!: () => void
  const held = new Promise<void>((resolve) => {
    release = resolve
  })
  const webhook = await holdJobCreation(t, kube, held)
  const started = control.call('POST', `/applications/${app.id}/builds`)
  await until(() => webhook.arrived(), 20_000, 'the Job create is in flight')
  const buildId = (await control.server.db.query<{ id: string }>('SELECT id FROM builds'))[0]?.id ?? ''

  const watched = watches(kube)
  proxy.cut()
  await until(() => watches(kube) > watched, 20_000, 'the other replica listed again and watches')
  t.equal(await buildStatus(control.server.db, buildId), 'pending', 'neither replica took it for lost')

  release()
  const reply = await started
  t.equal(reply.status, 202)
  await succeedJob(kube, `build-${buildId}`)
  await until(async () => (await buildStatus(control.server.db, buildId)) === 'succeeded', 20_000, 'the build succeeds')
})

t.test('a build whose Job was never created counts as lost once the grace from its creation has passed', async (t) => {
  const { control, proxy } = await startRealClusterControl(t, ENGINE, { proxy: true })
  const app = await createApp(control, 'hello')
  // As a replica that died between inserting the build and creating its Job leaves it.
  const recent = '33333333-3333-4333-8333-333333333333'
  const stale = '44444444-4444-4444-8444-444444444444'
  await control.server.db.query("INSERT INTO builds (id, application_id, status) VALUES ($1, $2, 'pending')", [
    recent,
    app.id,
  ])
  await control.server.db.query(
    `INSERT INTO builds (id, application_id, status, created_at) VALUES ($1, $2, 'pending', now() - interval '${JOB_CREATION_GRACE_SECONDS + 1} seconds')`,
    [stale, app.id],
  )
  // The watch breaks: the list after it settles both.
  proxy?.cut()
  await until(async () => (await buildStatus(control.server.db, stale)) === 'failed', 20_000, 'the stale one fails')
  t.equal(await buildStatus(control.server.db, recent), 'pending', 'the recent one waits for its Job')
})
