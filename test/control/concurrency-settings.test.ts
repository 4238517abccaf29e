// An application's concurrency (its share of the shared worker, issue 40) through the API: the
// platform's --local-max-concurrent-requests and --local-max-queued-requests are its default
// and its largest value, a value above them is a 400 naming the field and the setting, what
// is sent is what is stored and served; the migration that added it on each engine; and, as a
// property over random platform limits, accepted exactly when within bounds.
import fc from 'fast-check'
import t from 'tap'
import { checkConcurrency, concurrencyInForce } from '@session-relay/control/domain/policy'
import { openDatabase } from '@session-relay/control/store/db'
import { findApplication } from '@session-relay/control/store/applications'
import { migrate, migrations } from '@session-relay/control/store/migrations'
import { createApp, eachEngine, freshStore, startTestControl } from '../helpers/control.js'
import type { TestControl } from '../helpers/control.js'
import { fuzzOptions } from '../helpers/fuzz.js'

const LOCAL = ['--dev-insecure-skip-auth', '--runtime', 'local']

type Shown = { concurrency: { maxRunning: number; maxQueued: number } }

async function patch(control: TestControl, appId: string, concurrency: unknown) {
  const reply = await control.call('PATCH', `/applications/${appId}`, { json: { concurrency } })
  return { status: reply.status, body: reply.body as Shown & { error: string } }
}

eachEngine(t, "PATCH concurrency: the platform's values are the default and the largest", async (t, engine) => {
  const control = await startTestControl(t, engine, [
    ...LOCAL,
    '--local-max-concurrent-requests',
    '8',
    '--local-max-queued-requests',
    '20',
  ])
  t.match((await control.call('GET', '/policy')).body, { concurrency: { maxRunning: 8, maxQueued: 20 } }, 'GET /policy')
  const app = await createApp(control, 'hello')
  t.same((app as unknown as Shown).concurrency, { maxRunning: 8, maxQueued: 20 }, "a new application: the platform's")

  const set = await patch(control, app.id, { maxRunning: 1, maxQueued: 0 })
  t.equal(set.status, 200)
  t.same(set.body.concurrency, { maxRunning: 1, maxQueued: 0 }, 'the answer shows what was sent')
  const read = (await control.call('GET', `/applications/${app.id}`)).body as Shown
  t.same(read.concurrency, { maxRunning: 1, maxQueued: 0 }, 'and GET')

  const above = await patch(control, app.id, { maxRunning: 9 })
  t.equal(above.status, 400)
  t.match(
    above.body.error,
    /concurrency\.maxRunning: 9 is above the platform's largest 8 \(--local-max-concurrent-requests\)/,
  )
  const queued = await patch(control, app.id, { maxQueued: 21 })
  t.match(
    queued.body.error,
    /concurrency\.maxQueued: 21 is above the platform's largest 20 \(--local-max-queued-requests\)/,
  )
  for (const bad of [{ maxRunning: 0 }, { maxQueued: -1 }, { maxRunning: 1.5 }, { maxRunning: '2' }, { other: 1 }]) {
    const reply = await patch(control, app.id, bad)
    t.equal(reply.status, 400, JSON.stringify(bad))
    t.match(reply.body.error, /concurrency/, 'names the field')
  }
  t.same(
    ((await control.call('GET', `/applications/${app.id}`)).body as Shown).concurrency,
    { maxRunning: 1, maxQueued: 0 },
    'a refusal changes nothing',
  )

  const half = await patch(control, app.id, { maxQueued: 5 })
  t.same(half.body.concurrency, { maxRunning: 8, maxQueued: 5 }, "a field left out is the platform's again")
  t.same((await patch(control, app.id, {})).body.concurrency, { maxRunning: 8, maxQueued: 20 }, '{} resets both')
  await control.close()

  // A platform lowered since: the stored value is kept, and what is in force is the new largest.
  const store = control.store
  const first = await startTestControl(t, engine, LOCAL, { store })
  t.equal((await patch(first, app.id, { maxRunning: 50, maxQueued: 3 })).status, 200)
  await first.close()
  const lowered = await startTestControl(t, engine, [...LOCAL, '--local-max-concurrent-requests', '4'], { store })
  t.same(
    ((await lowered.call('GET', `/applications/${app.id}`)).body as Shown).concurrency,
    { maxRunning: 4, maxQueued: 3 },
    'lowered to the platform now',
  )
})

eachEngine(t, 'migration 7: applications from before have the platform values', async (t, engine) => {
  const store = await freshStore(t, engine)
  const db = await openDatabase({
    url: store.databaseUrl,
    dataDir: store.dataDir,
    logger: { error: () => {}, warn: () => {} },
  })
  t.teardown(() => db.close())
  await migrate(
    db,
    migrations.filter((m) => m.version < 7),
  )
  const id = '6d1f7a0e-2b9c-4e44-9a4e-0d8f1b2c3a4b'
  await db.query(
    "INSERT INTO applications (id, name, tenant, cluster_name, language, runtime) VALUES ($1, 'old', 'default', 'old', 'js', 'wasmkube')",
    [id],
  )
  t.same(
    await migrate(
      db,
      migrations.filter((m) => m.version <= 7),
    ),
    [7],
    'only the new version',
  )
  const app = await findApplication(db, id)
  t.same(app?.settings.concurrency, {}, 'stored empty')
  t.same(
    concurrencyInForce(
      { localMaxConcurrentRequests: 100, localMaxQueuedRequests: 100 },
      app?.settings.concurrency ?? {},
    ),
    { maxRunning: 100, maxQueued: 100 },
    "so the platform's values are in force, as before",
  )
})

const platformLimits = fc.record({
  localMaxConcurrentRequests: fc.integer({ min: 1, max: 1000 }),
  localMaxQueuedRequests: fc.integer({ min: 0, max: 10_000 }),
})
const requested = fc.record(
  { maxRunning: fc.integer({ min: 1, max: 1000 }), maxQueued: fc.integer({ min: 0, max: 10_000 }) },
  { requiredKeys: [] },
)
type Platform = { localMaxConcurrentRequests: number; localMaxQueuedRequests: number }
type Asked = { maxRunning?: number; maxQueued?: number }
const within = (platform: Platform, asked: Asked): boolean =>
  (asked.maxRunning ?? 0) <= platform.localMaxConcurrentRequests &&
  (asked.maxQueued ?? 0) <= platform.localMaxQueuedRequests

t.test('the policy, over random platform limits: accepted iff within them; in force never above them', async (t) => {
  fc.assert(
    fc.property(platformLimits, requested, (platform, asked) => {
      let accepted = true
      try {
        checkConcurrency(platform, asked)
      } catch {
        accepted = false
      }
      if (accepted !== within(platform, asked)) throw new Error(`accepted: ${accepted}`)
      const inForce = concurrencyInForce(platform, asked)
      if (
        inForce.maxRunning > platform.localMaxConcurrentRequests ||
        inForce.maxQueued > platform.localMaxQueuedRequests
      )
        throw new Error(`in force above the platform: ${JSON.stringify(inForce)}`)
      if (
        accepted &&
        (inForce.maxRunning !== (asked.maxRunning ?? platform.localMaxConcurrentRequests) ||
          inForce.maxQueued !== (asked.maxQueued ?? platform.localMaxQueuedRequests))
      )
        throw new Error(`in force is not what was asked: ${JSON.stringify(inForce)}`)
    }),
    fuzzOptions(25),
  )
  t.pass('as the bounds say')
})

t.test('through PATCH, over random platform limits: 200 iff within them, and served as sent', async (t) => {
  // A control plane per platform drawn (they take a second each), many values against each.
  const platforms = fc.sample(platformLimits, { numRuns: 3, seed: fuzzOptions().seed })
  for (const platform of platforms) {
    const control = await startTestControl(t, 'pglite', [
      ...LOCAL,
      '--local-max-concurrent-requests',
      String(platform.localMaxConcurrentRequests),
      '--local-max-queued-requests',
      String(platform.localMaxQueuedRequests),
    ])
    const app = await createApp(control, 'hello')
    // Values near the bounds as often as anywhere.
    const near = (bound: number, low: number) =>
      fc.oneof(
        fc.integer({ min: low, max: bound * 2 + 1 }),
        fc.integer({ min: Math.max(low, bound - 2), max: bound + 2 }),
      )
    const asked = fc.record(
      { maxRunning: near(platform.localMaxConcurrentRequests, 1), maxQueued: near(platform.localMaxQueuedRequests, 0) },
      { requiredKeys: [] },
    )
    await fc.assert(
      fc.asyncProperty(asked, async (value) => {
        const reply = await patch(control, app.id, value)
        const expected = within(platform, value) ? 200 : 400
        if (reply.status !== expected) throw new Error(`${reply.status} ${JSON.stringify(reply.body)}`)
        if (expected === 400) {
          if (!/^(Invalid input: )?concurrency\.max(Running|Queued)\b/.test(reply.body.error))
            throw new Error(`the refusal names no field: ${reply.body.error}`)
          return
        }
        const served = ((await control.call('GET', `/applications/${app.id}`)).body as Shown).concurrency
        const sent = {
          maxRunning: value.maxRunning ?? platform.localMaxConcurrentRequests,
          maxQueued: value.maxQueued ?? platform.localMaxQueuedRequests,
        }
        if (
          JSON.stringify(served) !== JSON.stringify(sent) ||
          JSON.stringify(reply.body.concurrency) !== JSON.stringify(sent)
        )
          throw new Error(`served ${JSON.stringify(served)}, sent ${JSON.stringify(value)}`)
      }),
      fuzzOptions(1),
    )
    await control.close()
  }
  t.pass('every answer as the bounds say')
})
