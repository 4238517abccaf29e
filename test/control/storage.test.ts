// Storage on each engine: migrations (idempotent, concurrent, atomic, incremental), data kept
// across restarts, the embedded data directory created on first start, timestamps in UTC
// whatever the database session's time zone.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { openDatabase } from '@session-relay/control/store/db'
import type { Database } from '@session-relay/control/store/db'
import { migrate, migrations } from '@session-relay/control/store/migrations'
import { createApp, eachEngine, firstFunction, freshStore, startTestControl } from '../helpers/control.js'
import type { Store } from '../helpers/control.js'

const quiet = { error: () => {}, warn: () => {} }

async function open(t: Parameters<Parameters<typeof eachEngine>[2]>[0], store: Store): Promise<Database> {
  const db = await openDatabase({ url: store.databaseUrl, dataDir: store.dataDir, logger: quiet })
  t.teardown(() => db.close())
  return db
}

async function tables(db: Database): Promise<string[]> {
  const rows = await db.query<{ name: string }>(
    'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name',
  )
  return rows.map((row) => row.name)
}

eachEngine(t, 'migrations: applied once, in one go; running them again changes nothing', async (t, engine) => {
  const db = await open(t, await freshStore(t, engine))
  t.same(await tables(db), [], 'precondition: an empty database')
  t.same(
    await migrate(db),
    migrations.map((m) => m.version),
    'the first run applies every migration',
  )
  t.same(await tables(db), ['applications', 'builds', 'deployments', 'functions', 'schema_migrations', 'sources'])
  await db.query(
    "INSERT INTO applications (id, name, tenant, cluster_name, language, runtime) VALUES (gen_random_uuid(), 'kept', 'default', 'kept', 'go', 'wasmkube')",
  )
  t.same(await migrate(db), [], 'the second run applies nothing')
  t.same(await migrate(db), [], 'nor the third')
  const recorded = await db.query<{ version: number; name: string }>(
    'SELECT version, name FROM schema_migrations ORDER BY version',
  )
  t.same(
    recorded,
    migrations.map(({ version, name }) => ({ version, name })),
    'each version recorded once',
  )
  t.same(await db.query('SELECT name FROM applications'), [{ name: 'kept' }], 'rows survive re-runs')
})

eachEngine(t, 'migrations: concurrent runs apply each version once', async (t, engine) => {
  const store = await freshStore(t, engine)
  // Two processes on one PostgreSQL; PGlite has one connection, so the same instance twice.
  const first = await open(t, store)
  const second = engine === 'postgres' ? await open(t, store) : first
  const results = await Promise.all([migrate(first), migrate(second), migrate(first)])
  t.same(
    results.flat().sort(),
    migrations.map((m) => m.version),
    'every version applied by exactly one run',
  )
  t.same((await first.query('SELECT count(*)::int AS n FROM schema_migrations'))[0], { n: migrations.length })
})

eachEngine(
  t,
  'migrations: a later version is applied alone; a failing one leaves nothing behind',
  async (t, engine) => {
    const db = await open(t, await freshStore(t, engine))
    await migrate(db)
    // Versions after the last shipped one, whatever that is.
    const shipped = migrations.map((m) => m.version)
    const latest = Math.max(...shipped)
    const next = {
      version: latest + 1,
      name: 'add a column',
      statements: ['ALTER TABLE applications ADD COLUMN owner text'],
    }
    t.same(await migrate(db, [...migrations, next]), [latest + 1], 'only the new version')
    t.same(
      await db.query(
        "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'applications' AND column_name = 'owner'",
      ),
      [{ name: 'owner' }],
    )

    const broken = {
      version: latest + 2,
      name: 'broken',
      statements: ['CREATE TABLE half_done (a int)', 'THIS IS NOT SQL'],
    }
    await t.rejects(migrate(db, [...migrations, next, broken]), /syntax error/, 'a failing migration fails the run')
    t.notOk((await tables(db)).includes('half_done'), 'its first statement was rolled back')
    t.same(
      (await db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).map(
        (r) => r.version,
      ),
      [...shipped, latest + 1],
      'and it is not recorded',
    )
  },
)

eachEngine(t, 'a restart on the same database keeps everything and migrates nothing', async (t, engine) => {
  const store = await freshStore(t, engine)
  const first = await startTestControl(t, engine, undefined, { store })
  t.match(
    first.logs.find((l) => l.msg === 'database ready'),
    { engine, applied: migrations.map((m) => m.version) },
    'the first start migrates',
  )
  const app = await createApp(first, 'survivor', { description: 'still here' })
  const fn = firstFunction(app)
  await first.call('PUT', `/applications/${app.id}/functions/${fn.id}/source`, {
    json: { files: { 'main.go': 'package main' } },
  })
  const before = (await first.call('GET', `/applications/${app.id}`)).body
  await first.close()

  const second = await startTestControl(t, engine, undefined, { store })
  t.match(
    second.logs.find((l) => l.msg === 'database ready'),
    { engine, applied: [] },
    'the restart migrates nothing',
  )
  t.same((await second.call('GET', `/applications/${app.id}`)).body, before, 'the application as it was')
  t.same(
    ((await second.call('GET', `/applications/${app.id}/functions/${fn.id}/source`)).body as { files: unknown }).files,
    { 'main.go': 'package main' },
    'and its source',
  )
})

t.test('the embedded data directory is created on first start, parents included', async (t) => {
  const store = await freshStore(t, 'pglite')
  const dataDir = join(store.dataDir, '..', 'new', 'nested', 'data')
  t.notOk(existsSync(dataDir), 'precondition: it does not exist')
  const control = await startTestControl(t, 'pglite', undefined, { store: { ...store, dataDir } })
  t.ok(existsSync(join(dataDir, 'PG_VERSION')), 'a PostgreSQL data directory now')
  t.match(
    control.logs.find((l) => l.msg === 'database ready'),
    { engine: 'pglite', dataDir, applied: migrations.map((m) => m.version) },
  )
  t.equal((await control.call('GET', '/applications')).status, 200)
})

eachEngine(t, 'timestamps are UTC ISO 8601 whatever the session time zone', async (t, engine) => {
  const store = await freshStore(t, engine)
  const zoned =
    engine === 'postgres'
      ? {
          ...store,
          databaseUrl: store.databaseUrl.replace('options=', 'options=-c%20timezone%3DPacific%2FKiritimati%20'),
        }
      : store
  const control = await startTestControl(t, engine, undefined, { store: zoned })
  if (engine === 'pglite') await control.server.db.query("SET TIME ZONE 'Pacific/Kiritimati'")
  const [{ zone }] = (await control.server.db.query<{ zone: string }>(
    "SELECT current_setting('TimeZone') AS zone",
  )) as [{ zone: string }]
  t.equal(zone, 'Pacific/Kiritimati', 'precondition: the session is 14 hours ahead of UTC')
  const before = Date.now()
  const app = await createApp(control)
  t.match(app.createdAt, /Z$/)
  t.ok(Math.abs(Date.parse(app.createdAt) - before) < 5_000, `createdAt ${app.createdAt} is now, not 14 hours off`)
})
