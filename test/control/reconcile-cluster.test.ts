// Deployments as desired state on the real Kubernetes API server (test/helpers/kube-apiserver.ts,
// the control plane with the Role from deploy/): a SpinApp deleted or edited by hand is put
// back at once from the watch, or by the periodic resync when no watch holds; an apply the cluster refuses, or an outage cuts, is retried with back-off
// until it holds, and both replicas (one PostgreSQL) answer the same reason meanwhile; a
// build's end recorded by a process that died before applying it is applied by the next start.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { setRoleVerb, SPINAPP, succeedJob } from '../fixtures/kube-real.js'
import { REPOSITORY, startRealClusterControl } from '../helpers/cluster.js'
import type { RealClusterControl } from '../helpers/cluster.js'
import { createApp, ENGINES, freshStore, until } from '../helpers/control.js'
import type { TestControl } from '../helpers/control.js'

t.setTimeout(300_000)

type Condition = { type: string; status: string; reason: string; message: string; lastTransitionTime: string }
type View = { replicas: number; deployment: { message: string; conditions: Condition[] } | null }

const FAST_RETRIES = { backoff: { initialMs: 50, maxMs: 200 } }

async function view(control: TestControl, appId: string): Promise<View> {
  return (await control.call('GET', `/applications/${appId}`)).body as View
}

const deployed = async (control: TestControl, appId: string): Promise<Condition | undefined> =>
  (await view(control, appId)).deployment?.conditions.find((c) => c.type === 'Deployed')

const specOf = async (cluster: RealClusterControl, name: string): Promise<Record<string, unknown> | undefined> =>
  (await cluster.kube.get(SPINAPP, name))?.spec as Record<string, unknown> | undefined

async function build(cluster: RealClusterControl, appId: string, name: string): Promise<string> {
  const started = (await cluster.control.call('POST', `/applications/${appId}/builds`)).body as { id: string }
  const image = `${REPOSITORY}/${name}@sha256:${'c'.repeat(64)}`
  await succeedJob(cluster.kube, `build-${started.id}`, image)
  // Any replica's build watcher may be the one that sees the Job end and deploys.
  await until(async () => (await specOf(cluster, name))?.image === image, 20_000, `build ${started.id} deployed`)
  return image
}

t.test('a SpinApp deleted or edited by hand is applied again at once, from the watch', async (t) => {
  // The default interval (30 s): no resync runs during the test.
  const cluster = await startRealClusterControl(t, 'pglite')
  const { control, kube } = cluster
  const app = await createApp(control, 'hello')
  await build(cluster, app.id, 'hello')
  const spec = await specOf(cluster, 'hello')
  t.match(await deployed(control, app.id), { status: 'True', reason: 'Applied' })

  await kube.must('DELETE', kube.path(SPINAPP, 'hello'))
  await until(async () => (await specOf(cluster, 'hello')) !== undefined, 20_000, 'the SpinApp put back')
  t.same(await specOf(cluster, 'hello'), spec, 'as it was applied')
  t.match(await deployed(control, app.id), { status: 'True', reason: 'Restored' })

  // Another field manager's edit: the control plane's fields win back.
  await kube.must('PATCH', kube.path(SPINAPP, 'hello'), { spec: { replicas: 7 } }, 'application/merge-patch+json')
  await until(async () => (await specOf(cluster, 'hello'))?.replicas !== 7, 20_000, 'the edit undone')
  t.same(await specOf(cluster, 'hello'), spec)
  t.match(await control.server.reconciler.reconcile(app.id), { kind: 'in-sync' }, 'nothing to do after')
})

t.test('with no watch, the periodic resync puts a deleted SpinApp back', async (t) => {
  const cluster = await startRealClusterControl(t, 'pglite', { watchProxy: true, flags: ['--resync-interval', '1s'] })
  const { control, kube, watches } = cluster
  const app = await createApp(control, 'lonely')
  await build(cluster, app.id, 'lonely')
  if (watches === null) throw new Error('no watch proxy')
  watches.refuseWatches = true
  watches.endWatches()
  await until(() => watches.watches() === 0, 10_000, 'no watch open')
  await kube.must('DELETE', kube.path(SPINAPP, 'lonely'))
  await until(async () => (await specOf(cluster, 'lonely')) !== undefined, 30_000, 'the SpinApp put back by a resync')
  t.match(await deployed(control, app.id), { status: 'True', reason: 'Restored' })
})

t.test("a build's end recorded by a process that died before its apply is applied by the next start", async (t) => {
  const first = await startRealClusterControl(t, 'pglite')
  const app = await createApp(first.control, 'late')
  // As the database holds it when the process dies between finishing the build and applying it.
  const image = `${REPOSITORY}/late@sha256:${'d'.repeat(64)}`
  await first.control.server.db.query(
    "INSERT INTO builds (id, application_id, status, image_ref, finished_at) VALUES ($1, $2, 'succeeded', $3, now())",
    [randomUUID(), app.id, image],
  )
  await first.control.close()
  t.equal(await specOf(first, 'late'), undefined, 'nothing applied yet')
  const second = await startRealClusterControl(t, 'pglite', { kube: first.kube, store: first.control.store })
  await until(async () => (await specOf(second, 'late'))?.image === image, 30_000, 'applied after the start')
  t.match(await deployed(second.control, app.id), { status: 'True', reason: 'Applied' })
})

if (ENGINES.includes('postgres')) {
  t.test(
    'an apply refused or cut off is retried until it holds; both replicas answer the same reason meanwhile',
    async (t) => {
      const store = await freshStore(t, 'postgres')
      const a = await startRealClusterControl(t, 'postgres', { store, proxy: true, reconcile: FAST_RETRIES })
      const b = await startRealClusterControl(t, 'postgres', { store, kube: a.kube })
      const app = await createApp(a.control, 'shared')
      await build(a, app.id, 'shared')

      // Refused: the Role without patch on SpinApps.
      await setRoleVerb(a.kube, 'core.spinkube.dev', 'spinapps', 'patch', false)
      const patched = await a.control.call('PATCH', `/applications/${app.id}`, { json: { replicas: 3 } })
      t.equal(patched.status, 200, 'saved')
      t.match((patched.body as View).deployment?.message, /^saved but not applied \(cluster permission missing/)
      const failures = async (): Promise<number> =>
        Number(
          (
            await a.control.server.db.query<{ failures: number }>(
              'SELECT failures FROM deployments WHERE application_id = $1',
              [app.id],
            )
          )[0]?.failures,
        )
      await until(async () => (await failures()) >= 3, 30_000, 'retried, again and again')
      const [onA, onB] = [await view(a.control, app.id), await view(b.control, app.id)]
      t.same(onA.deployment?.conditions, onB.deployment?.conditions, 'the same conditions on both replicas')
      t.match(onB.deployment?.message, /^the newest build is not deployed \(cluster permission missing/)
      t.equal(onA.deployment?.message, onB.deployment?.message, 'the same message on both replicas')
      t.not((await specOf(a, 'shared'))?.replicas, 3)
      await setRoleVerb(a.kube, 'core.spinkube.dev', 'spinapps', 'patch', true)
      await until(async () => (await specOf(a, 'shared'))?.replicas === 3, 30_000, 'the retry held')
      await until(async () => (await deployed(b.control, app.id))?.status === 'True', 10_000, 'Deployed on b')
      t.equal(await failures(), 0)

      // Cut: the API server unreachable from the replica, alone now (b, which reaches it, would
      // apply the change from its watch).
      await b.control.close()
      a.proxy?.pause()
      const cut = await a.control.call('PATCH', `/applications/${app.id}`, { json: { replicas: 2 } })
      t.match((cut.body as View).deployment?.message, /^saved but not applied \(cluster unreachable\)/)
      t.match(await deployed(a.control, app.id), {
        status: 'False',
        reason: 'ApplyFailed',
        message: 'cluster unreachable',
      })
      a.proxy?.resume()
      await until(async () => (await specOf(a, 'shared'))?.replicas === 2, 30_000, 'applied once it is reachable')
      await until(async () => (await deployed(a.control, app.id))?.status === 'True', 10_000, 'Deployed again')
    },
  )

  t.test('one replica at a time holds an application: the other one finds it taken', async (t) => {
    const store = await freshStore(t, 'postgres')
    const a = await startRealClusterControl(t, 'postgres', { store })
    const b = await startRealClusterControl(t, 'postgres', { store, kube: a.kube })
    const app = await createApp(a.control, 'leased')
    await build(a, app.id, 'leased')
    // The apply after the build recorded and its lease given back (the SpinApp is there first).
    await until(
      async () =>
        (
          await a.control.server.db.query(
            'SELECT 1 FROM deployments WHERE application_id = $1 AND applied IS NOT NULL AND lease_holder IS NULL',
            [app.id],
          )
        ).length === 1,
      20_000,
      'the apply recorded',
    )
    // a's lease, as while it applies.
    await a.control.server.db.query(
      "UPDATE deployments SET lease_holder = 'another replica', lease_until = now() + interval '1 hour' WHERE application_id = $1",
      [app.id],
    )
    t.match(await b.control.server.reconciler.reconcile(app.id), { kind: 'elsewhere' })
    // A holder that died: its lease ends, and the other replica goes on.
    await a.control.server.db.query(
      "UPDATE deployments SET lease_until = now() - interval '1 second' WHERE application_id = $1",
      [app.id],
    )
    t.match(await b.control.server.reconciler.reconcile(app.id), { kind: 'in-sync' })
  })
}
