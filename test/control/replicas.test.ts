// Replicas that agree on builds. A replica's resync must not fail a build whose Job another
// replica is still creating: the database records whether the Job was created, not one
// process's memory. A second build watcher on the same database stands for the other replica.
import t from 'tap'
import type { Test } from 'tap'
import { startBuildWatcher } from '../../control/src/cluster/build-watcher.js'
import { connectKube } from '../../control/src/cluster/kube.js'
import { createLogger } from '../../control/src/logger.js'
import { buildStatus, JOB_CREATION_GRACE_SECONDS } from '../../control/src/store/builds.js'
import { JOBS, succeedJob } from '../fixtures/kube-jobs.js'
import { startClusterControl } from '../helpers/cluster.js'
import type { ClusterControl } from '../helpers/cluster.js'
import { createApp, until } from '../helpers/control.js'

const ENGINE = 'pglite'

/** Another replica's build watcher: same cluster, same database, memory of its own. */
async function otherReplica (t: Test, cluster: ClusterControl): Promise<void> {
  const kube = connectKube(cluster.control.config)
  if (kube === null) throw new Error('no cluster')
  const watcher = startBuildWatcher({ kube, db: cluster.control.server.db, logger: createLogger('silent'), deploy: async () => {}, retryMs: 20 })
  t.teardown(() => watcher.close())
  await watcher.ready
}

t.test('a build whose Job one replica is still creating is not failed by the other\'s resync', async (t) => {
  const cluster = await startClusterControl(t, ENGINE)
  const { control, fake } = cluster
  await otherReplica(t, cluster)
  const app = await createApp(control, 'hello')

  // Hold the Job's creation until the other replica has listed the Jobs again.
  const jobs = fake.types.get(JOBS) as NonNullable<ReturnType<typeof fake.types.get>>
  const create = jobs.handle?.bind(jobs)
  let release!: () => void
  const held = new Promise<void>((resolve) => { release = resolve })
  let arrived = false
  jobs.handle = async (request: Parameters<NonNullable<typeof create>>[0]) => {
    if (request.verb === 'create') {
      arrived = true
      await held
    }
    return create?.(request) ?? false
  }
  const started = control.call('POST', `/applications/${app.id}/builds`)
  await until(() => arrived, 5000, 'the Job create is in flight')
  const buildId = (await control.server.db.query<{ id: string }>('SELECT id FROM builds'))[0]?.id ?? ''

  fake.dropWatches()
  await until(() => fake.watcherCount() === 2, 5000, 'both replicas listed again and watch')
  t.equal(await buildStatus(control.server.db, buildId), 'pending', 'neither replica took it for lost')

  release()
  const reply = await started
  t.equal(reply.status, 202)
  succeedJob(fake, `build-${buildId}`)
  await until(async () => await buildStatus(control.server.db, buildId) === 'succeeded', 5000, 'the build succeeds')
})

t.test('a build whose Job was never created counts as lost once the grace from its creation has passed', async (t) => {
  const cluster = await startClusterControl(t, ENGINE)
  const { control, fake } = cluster
  const app = await createApp(control, 'hello')
  // As a replica that died between inserting the build and creating its Job leaves it.
  const recent = '33333333-3333-4333-8333-333333333333'
  const stale = '44444444-4444-4444-8444-444444444444'
  await control.server.db.query("INSERT INTO builds (id, application_id, status) VALUES ($1, $2, 'pending')", [recent, app.id])
  await control.server.db.query(`INSERT INTO builds (id, application_id, status, created_at) VALUES ($1, $2, 'pending', now() - interval '${JOB_CREATION_GRACE_SECONDS + 1} seconds')`, [stale, app.id])
  fake.dropWatches()
  await until(async () => await buildStatus(control.server.db, stale) === 'failed', 5000, 'the stale one fails')
  t.equal(await buildStatus(control.server.db, recent), 'pending', 'the recent one waits for its Job')
})
