// Reads kept until the next write (store/db.ts `kept`): with PGlite, the only writer being this
// process, a kept read answers without the database until any write starts; with PostgreSQL,
// which other replicas write, every read goes to the database. Either way a read never answers
// what a finished write changed.
import fc from 'fast-check'
import t from 'tap'
import { openDatabase } from '@session-relay/control/store/db'
import type { Database } from '@session-relay/control/store/db'
import { eachEngine, freshStore } from '../helpers/control.js'
import type { Engine } from '../helpers/control.js'

const quiet = { error: () => {}, warn: () => {} }

async function openWithTable(t: Parameters<Parameters<typeof eachEngine>[2]>[0], engine: Engine): Promise<Database> {
  const store = await freshStore(t, engine)
  const db = await openDatabase({ url: store.databaseUrl, dataDir: store.dataDir, logger: quiet })
  t.teardown(() => db.close())
  await db.query('CREATE TABLE kv (k integer PRIMARY KEY, v integer NOT NULL)')
  await db.query('INSERT INTO kv SELECT k, 0 FROM generate_series(0, 3) AS k')
  return db
}

/** A kept read of row `k`, counting the reads that reached the database. */
function reader(db: Database): { read: (k: number) => Promise<number>; reads: () => number } {
  let reads = 0
  return {
    read: (k) =>
      db.kept(`kv ${k}`, async () => {
        reads++
        const [row] = await db.query<{ v: number }>('SELECT v FROM kv WHERE k = $1', [k])
        return row?.v ?? -1
      }),
    reads: () => reads,
  }
}

eachEngine(
  t,
  'a kept read answers from memory until a write, only where this process is the only writer',
  async (t, engine) => {
    const db = await openWithTable(t, engine)
    const { read, reads } = reader(db)
    for (let i = 0; i < 5; i++) t.equal(await read(1), 0)
    t.equal(reads(), engine === 'pglite' ? 1 : 5, engine === 'pglite' ? 'read once' : 'read every time')

    await db.query('UPDATE kv SET v = 7 WHERE k = 1')
    t.equal(await read(1), 7, 'a plain write is seen')
    await db.transaction((tx) => tx.query('UPDATE kv SET v = 8 WHERE k = 1'))
    t.equal(await read(1), 8, 'a write in a transaction is seen')
    await db.query('INSERT INTO kv VALUES (9, 9)')
    t.equal(await read(9), 9, 'a write to another row forgets a kept miss too')
  },
)

eachEngine(t, 'a read that overlapped a write is not kept', async (t, engine) => {
  const db = await openWithTable(t, engine)
  const stale = await db.kept('kv 2', async () => {
    const [row] = await db.query<{ v: number }>('SELECT v FROM kv WHERE k = 2')
    await db.query('UPDATE kv SET v = 5 WHERE k = 2')
    return row?.v
  })
  t.equal(stale, 0, 'it answered what it read')
  t.equal(await reader(db).read(2), 5, 'the next read is not that answer')
})

t.test('kept reads are bounded: past the limit all are forgotten, and read again [pglite]', async (t) => {
  const db = await openWithTable(t, 'pglite')
  const { read, reads } = reader(db)
  await read(0)
  let misses = 0
  // Keys the database answers with a miss each; ten thousand of them fill the limit.
  for (let i = 0; i < 10_000; i++) await db.kept(`other ${i}`, async () => misses++)
  t.equal(misses, 10_000)
  await read(0)
  t.equal(reads(), 2, 'the first key was forgotten when the limit was reached')
})

eachEngine(t, 'property: any interleaving of kept reads and writes reads what was last written', async (t, engine) => {
  const db = await openWithTable(t, engine)
  const model = [0, 0, 0, 0]
  const { read } = reader(db)
  const step = fc.oneof(
    fc.record({ read: fc.integer({ min: 0, max: 3 }) }),
    fc.record({ write: fc.integer({ min: 0, max: 3 }), value: fc.integer({ min: 1, max: 1000 }) }),
  )
  await fc.assert(
    fc.asyncProperty(fc.array(step, { maxLength: 20 }), async (steps) => {
      for (const s of steps) {
        if ('read' in s) {
          if ((await read(s.read)) !== model[s.read]) return false
        } else {
          // Every other write in a transaction: both kinds must be seen.
          const sql = 'UPDATE kv SET v = $2 WHERE k = $1'
          if (s.value % 2 === 0) await db.query(sql, [s.write, s.value])
          else await db.transaction((tx) => tx.query(sql, [s.write, s.value]))
          model[s.write] = s.value
        }
      }
      return true
    }),
    { numRuns: 40 },
  )
  t.pass('every read matched the last write')
})
