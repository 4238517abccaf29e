// One small interface over the two engines: PostgreSQL through a `pg` pool, or PostgreSQL
// compiled to WebAssembly (PGlite) in a local directory when no database URL is configured.
// Both speak the same SQL and hand back the same JavaScript types (Date for timestamptz,
// parsed objects for jsonb, strings for uuid), so nothing above this module knows which runs.
import pg from 'pg'
import { lockDataDir } from './data-dir-lock.js'
import { makeOwnerOnly, prepareDataDir, restrictTree } from './data-dir.js'

type Row = Record<string, unknown>

export type Sql = {
  query<T extends Row = Row>(text: string, params?: unknown[]): Promise<T[]>
}

export type Database = Sql & {
  engine: 'pglite' | 'postgres'
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T>
  /**
   * What `read` answers, kept under `key` until the next write. With PGlite this process is the
   * only writer (data-dir-lock.ts), so it sees every write and forgets every kept read at each;
   * with PostgreSQL, which other replicas write too, `read` runs every time. What it answers is
   * shared by every caller until then: read it, never change it.
   */
  kept<T>(key: string, read: () => Promise<T>): Promise<T>
  close(): Promise<void>
}

export type DatabaseLogger = {
  error(details: object, message: string): void
  warn(details: object, message: string): void
}

export async function openDatabase(opts: { url: string; dataDir: string; logger: DatabaseLogger }): Promise<Database> {
  return opts.url === '' ? openPglite(opts.dataDir, opts.logger) : openPostgres(opts.url, opts.logger)
}

async function openPglite(dataDir: string, logger: DatabaseLogger): Promise<Database> {
  prepareDataDir(dataDir)
  const unlock = lockDataDir(dataDir)
  let db: Awaited<ReturnType<typeof createPglite>>
  try {
    const repaired = makeOwnerOnly(dataDir)
    if (repaired !== null) logger.warn({ dataDir }, repaired)
    db = await createPglite(dataDir)
    restrictTree(dataDir)
  } catch (error) {
    unlock()
    throw error
  }
  const reads = keptReads()
  return {
    engine: 'pglite',
    query: async (text, params) =>
      READ_ONLY.test(text)
        ? (await db.query<never>(text, params)).rows
        : reads.writing(async () => (await db.query<never>(text, params)).rows),
    transaction: (fn) =>
      reads.writing(() =>
        db.transaction((tx) => fn({ query: async (text, params) => (await tx.query<never>(text, params)).rows })),
      ),
    kept: reads.kept,
    close: once(async () => {
      try {
        await db.close()
      } finally {
        unlock()
      }
    }),
  }
}

// Loaded only when used: it is a large WebAssembly module a PostgreSQL deployment never needs.
async function createPglite(dataDir: string) {
  const { PGlite } = await import('@electric-sql/pglite')
  return PGlite.create(dataDir)
}

function openPostgres(url: string, logger: DatabaseLogger): Database {
  const pool = new pg.Pool({ connectionString: url, max: 10, application_name: 'platform-control' })
  // An idle connection that breaks (server restart) emits here; unhandled, it would kill the process.
  pool.on('error', (error) => logger.error({ err: error }, 'idle database connection failed'))
  return {
    engine: 'postgres',
    query: async (text, params) => (await pool.query<never>(text, params)).rows,
    async transaction(fn) {
      const client = await pool.connect()
      let broken: Error | undefined
      try {
        await client.query('BEGIN')
        const result = await fn({ query: async (text, params) => (await client.query<never>(text, params)).rows })
        await client.query('COMMIT')
        return result
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: Error) => {
          broken = rollbackError
        })
        throw error
      } finally {
        // A connection whose rollback failed is in an unknown state: the pool must drop it.
        client.release(broken)
      }
    },
    kept: (_key, read) => read(),
    close: once(() => pool.end()),
  }
}

/** A statement that changes nothing: a plain SELECT. Anything else counts as a write. */
const READ_ONLY = /^\s*SELECT\b/i

/** Reads kept at most until so many, then all forgotten: ids asked for at random cost a miss, never memory. */
const KEPT_READS = 10_000

/**
 * Kept reads for one writer. The generation moves when a write ends (or fails): a read saw every
 * write that ended before it began, so it is kept only when none ended while it ran, and it is
 * current until the next one ends. A write still running may not have happened yet for anyone.
 */
function keptReads() {
  let generation = 0
  let keptAt = 0
  const kept = new Map<string, unknown>()
  return {
    writing: async <T>(write: () => Promise<T>): Promise<T> => {
      try {
        return await write()
      } finally {
        generation++
      }
    },
    kept: async <T>(key: string, read: () => Promise<T>): Promise<T> => {
      if (keptAt !== generation) {
        kept.clear()
        keptAt = generation
      }
      if (kept.has(key)) return kept.get(key) as T
      const started = generation
      const value = await read()
      if (started === generation) {
        if (kept.size >= KEPT_READS) kept.clear()
        kept.set(key, value)
      }
      return value
    },
  }
}

// Closing twice (a failed start, then a shutdown) must not throw: pg's pool refuses a second end.
function once(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | null = null
  return () => (closing ??= close())
}

/** PostgreSQL's unique_violation on the named constraint. */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
  const e = error as { code?: string; constraint?: string } | null
  return e?.code === '23505' && e.constraint === constraint
}

/** PostgreSQL's foreign_key_violation on the named constraint. */
export function isForeignKeyViolation(error: unknown, constraint: string): boolean {
  const e = error as { code?: string; constraint?: string } | null
  return e?.code === '23503' && e.constraint === constraint
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Ids are UUIDs; anything else names no row, and must not reach PostgreSQL's uuid parser (a 500). */
export function isUuid(id: string): boolean {
  return UUID.test(id)
}

/** Timestamps leave the database as Date and the API as ISO 8601 in UTC. */
export function iso(date: Date): string {
  return date.toISOString()
}
