// Applications in the database. Creating one also creates its first function (named after it,
// route "/...") with the source the caller scaffolds (empty without one), in the same transaction; deleting one removes its
// functions, sources and builds through the foreign keys' ON DELETE CASCADE, in one statement.
import { randomUUID } from 'node:crypto'
import { ConflictError } from '../errors.js'
import type { ApplicationSummaryT, ApplicationT, LanguageT, RuntimeT } from '../model/resources.js'
import { listBuilds } from './builds.js'
import type { Database } from './db.js'
import { iso, isUniqueViolation, isUuid } from './db.js'
import type { Scaffold } from './functions.js'
import { insertFunction } from './functions.js'

const FIRST_FUNCTION_ROUTE = '/...'

export type NewApplication = { name: string; language: LanguageT; runtime: RuntimeT; description?: string | undefined }

type ApplicationRow = { id: string; name: string; language: LanguageT; runtime: RuntimeT; description: string; created_at: Date }

const COLUMNS = 'id, name, language, runtime, description, created_at'

function toSummary (row: ApplicationRow): ApplicationSummaryT {
  return { id: row.id, name: row.name, language: row.language, runtime: row.runtime, description: row.description, createdAt: iso(row.created_at) }
}

export async function listApplications (db: Database): Promise<ApplicationSummaryT[]> {
  const rows = await db.query<ApplicationRow>(`SELECT ${COLUMNS} FROM applications ORDER BY name`)
  return rows.map(toSummary)
}

export async function getApplication (db: Database, id: string): Promise<ApplicationT | null> {
  if (!isUuid(id)) return null
  const [row] = await db.query<ApplicationRow>(`SELECT ${COLUMNS} FROM applications WHERE id = $1`, [id])
  if (row === undefined) return null
  const functions = await db.query<{ id: string; name: string; route: string }>(
    'SELECT id, name, route FROM functions WHERE application_id = $1 ORDER BY name', [id])
  // An application deleted between the two reads has no builds: an empty list, not an error.
  const builds = await listBuilds(db, id) ?? []
  return { ...toSummary(row), functions, deployment: null, builds }
}

/** Null when the application does not exist. */
export async function applicationName (db: Database, id: string): Promise<string | null> {
  if (!isUuid(id)) return null
  const [row] = await db.query<{ name: string }>('SELECT name FROM applications WHERE id = $1', [id])
  return row?.name ?? null
}

export async function createApplication (db: Database, input: NewApplication, scaffold?: Scaffold): Promise<ApplicationT> {
  const id = randomUUID()
  try {
    return await db.transaction(async (tx) => {
      const [row] = await tx.query<ApplicationRow>(
        `INSERT INTO applications (id, name, language, runtime, description) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
        [id, input.name, input.language, input.runtime, input.description ?? ''])
      const fn = await insertFunction(tx, id, { name: input.name, route: FIRST_FUNCTION_ROUTE }, scaffold?.(input.language, input.name) ?? {})
      return { ...toSummary(row as ApplicationRow), functions: [{ id: fn.id, name: fn.name, route: fn.route }], deployment: null, builds: [] }
    })
  } catch (error) {
    if (isUniqueViolation(error, 'applications_name_key')) throw new ConflictError(`an application named ${input.name} already exists`)
    throw error
  }
}

/** False when there was no such application. */
export async function deleteApplication (db: Database, id: string): Promise<boolean> {
  if (!isUuid(id)) return false
  const rows = await db.query('DELETE FROM applications WHERE id = $1 RETURNING id', [id])
  return rows.length > 0
}

/** The application without its functions and builds; null when there is none. */
export async function findApplication (db: Database, id: string): Promise<ApplicationSummaryT | null> {
  if (!isUuid(id)) return null
  const [row] = await db.query<ApplicationRow>(`SELECT ${COLUMNS} FROM applications WHERE id = $1`, [id])
  return row === undefined ? null : toSummary(row)
}
