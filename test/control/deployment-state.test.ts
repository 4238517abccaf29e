// A deployment's stored state (store/deployments.ts, domain/conditions.ts): conditions keep
// their transition time while their status holds, whatever order changes come in; a PATCH
// moves the settings' or the variables' generation only when it changes what runs; the lease
// is held by one holder at a time until it is released or runs out. On both engines.
import fc from 'fast-check'
import t from 'tap'
import { deploymentMessage, setCondition } from '@session-relay/control/domain/conditions'
import type { ConditionT } from '@session-relay/control/model/resources'
import { updateSettings } from '@session-relay/control/store/applications'
import { bumpGeneration, readDesired, releaseLease, takeLease } from '@session-relay/control/store/deployments'
import { openDatabase } from '@session-relay/control/store/db'
import { migrate, migrations } from '@session-relay/control/store/migrations'
import { createApp, eachEngine, freshStore, startTestControl } from '../helpers/control.js'

const change = fc.record({
  type: fc.constantFrom('Deployed' as const, 'Ready' as const),
  status: fc.constantFrom('True' as const, 'False' as const, 'Unknown' as const),
  reason: fc.constantFrom('Applied', 'ApplyFailed', 'Restored', 'Answering'),
  message: fc.string({ maxLength: 20 }),
})

t.test('a condition keeps its transition time while its status holds, and moves when it changes', async (t) => {
  fc.assert(
    fc.property(fc.array(change, { maxLength: 30 }), (changes) => {
      let conditions: ConditionT[] = []
      // The oracle: per type, the step at which its status last changed.
      const since = new Map<string, { status: string; at: number }>()
      changes.forEach((next, step) => {
        conditions = setCondition(conditions, next, new Date(step * 1000))
        const before = since.get(next.type)
        if (before === undefined || before.status !== next.status)
          since.set(next.type, { status: next.status, at: step })
      })
      for (const condition of conditions) {
        const expected = since.get(condition.type)
        if (expected === undefined || condition.lastTransitionTime !== new Date(expected.at * 1000).toISOString())
          return false
      }
      // One of each type at most, Deployed first.
      const types = conditions.map((c) => c.type)
      return new Set(types).size === types.length && (types.length <= 1 || types[0] === 'Deployed')
    }),
  )
  t.pass('held for every sequence')
})

t.test('the message names why the newest build is not deployed only while Deployed is False', async (t) => {
  const at = new Date(0)
  const failed = setCondition([], { type: 'Deployed', status: 'False', reason: 'ApplyFailed', message: 'no' }, at)
  t.equal(
    deploymentMessage(failed, '1 of 1 replicas ready'),
    'the newest build is not deployed (no); retried with back-off, or POST deploy tries again now; 1 of 1 replicas ready',
  )
  const held = setCondition(failed, { type: 'Deployed', status: 'True', reason: 'Applied', message: 'yes' }, at)
  t.equal(deploymentMessage(held, '1 of 1 replicas ready'), '1 of 1 replicas ready')
  t.equal(deploymentMessage([], 'loading'), 'loading')
})

eachEngine(t, 'migration 8: an application from before has generation 1 and nothing applied', async (t, engine) => {
  const store = await freshStore(t, engine)
  const db = await openDatabase({ url: store.databaseUrl, dataDir: store.dataDir, logger: { error() {}, warn() {} } })
  t.teardown(() => db.close())
  await migrate(
    db,
    migrations.filter((m) => m.version < 8),
  )
  const id = '7e2a8b1f-3c0d-4f55-8b5f-1e9a2c3d4b5c'
  await db.query(
    "INSERT INTO applications (id, name, tenant, cluster_name, language, runtime) VALUES ($1, 'old', 'default', 'old', 'js', 'wasmkube')",
    [id],
  )
  await db.query(
    "INSERT INTO builds (id, application_id, status, image_ref, finished_at) VALUES ($1, $2, 'succeeded', 'img', now())",
    ['8f3b9c2a-4d1e-4a66-9c6a-2f0b3d4e5c6d', id],
  )
  t.same(await migrate(db), [8], 'only the new version')
  t.same(
    await readDesired(db, id),
    {
      target: { image: 'img', settingsGeneration: 1, variablesGeneration: 1, generation: 1 },
      state: { applied: null, conditions: [], failures: 0, retryAt: null },
    },
    'so the first reconcile applies it',
  )
})

eachEngine(t, 'generations move with what runs, and the lease has one holder', async (t, engine) => {
  const control = await startTestControl(t, engine)
  const { db } = control.server
  const app = await createApp(control, 'gen')
  const generations = async (): Promise<unknown> => {
    await db.query(
      "INSERT INTO builds (id, application_id, status, image_ref, finished_at) SELECT gen_random_uuid(), $1, 'succeeded', 'img', now() WHERE NOT EXISTS (SELECT 1 FROM builds WHERE application_id = $1)",
      [app.id],
    )
    const desired = await readDesired(db, app.id)
    return desired?.target
  }
  t.same(await generations(), { image: 'img', settingsGeneration: 1, variablesGeneration: 1, generation: 1 })
  await updateSettings(db, app.id, { description: 'words only' })
  t.match(await generations(), { settingsGeneration: 1, variablesGeneration: 1 }, 'a description runs nothing')
  await updateSettings(db, app.id, { replicas: 2 })
  t.match(await generations(), { settingsGeneration: 2, variablesGeneration: 1 })
  await updateSettings(db, app.id, { variables: { a: { value: 'b' } } })
  t.match(await generations(), { settingsGeneration: 2, variablesGeneration: 2 })
  t.equal(await bumpGeneration(db, app.id), true)
  t.match(await generations(), { generation: 2 })
  t.equal(await bumpGeneration(db, '00000000-0000-4000-8000-000000000000'), false, 'no such application')

  t.equal(await takeLease(db, app.id, 'a', 60_000), true)
  t.equal(await takeLease(db, app.id, 'b', 60_000), false, 'held by a')
  t.equal(await takeLease(db, app.id, 'a', 60_000), true, 'a renews its own')
  await releaseLease(db, app.id, 'b')
  t.equal(await takeLease(db, app.id, 'b', 60_000), false, 'only its holder releases it')
  await releaseLease(db, app.id, 'a')
  t.equal(await takeLease(db, app.id, 'b', 60_000), true, 'released')
  await db.query("UPDATE deployments SET lease_until = now() - interval '1 second' WHERE application_id = $1", [app.id])
  t.equal(await takeLease(db, app.id, 'a', 60_000), true, 'run out: a holder that died')

  // Removing an application that never ran takes its lease too: it has no row until then.
  const never = await createApp(control, 'never-reconciled')
  t.equal(await takeLease(db, never.id, 'a', 60_000), true, 'no row yet: made, and taken')
  t.equal(await takeLease(db, never.id, 'b', 60_000), false, 'and then held')
  t.equal(await takeLease(db, '00000000-0000-4000-8000-000000000000', 'b', 60_000), true, 'no such application')
})
