// Functions of an application in the database. Each has exactly one source row, created with
// it (holding the language's template when the caller scaffolds one) and deleted with it. Names and routes are unique within an application; the
// database's unique constraints decide, so two concurrent creates cannot both win.
import { randomUUID } from 'node:crypto'
import { ConflictError } from '@session-relay/common/errors'
import type { FunctionT, LanguageT } from '../model/resources.js'
import type { Database, Sql } from './db.js'
import { iso, isForeignKeyViolation, isUniqueViolation, isUuid } from './db.js'

type FunctionRow = { id: string; name: string; route: string; created_at: Date }

const COLUMNS = 'id, name, route, created_at'

function toFunction(row: FunctionRow): FunctionT {
  return { id: row.id, name: row.name, route: row.route, createdAt: iso(row.created_at) }
}

/** The route a function gets when its creator names none. */
export function defaultRoute(name: string): string {
  return `/${name}/...`
}

/** Null when the application does not exist. */
export async function listFunctions(db: Database, appId: string): Promise<FunctionT[] | null> {
  if (!isUuid(appId)) return null
  // One read answers both questions: no row at all means no application, a row of nulls
  // an application without functions.
  const rows = await db.query<{ id: string | null; name: string; route: string; created_at: Date }>(
    `SELECT f.id, f.name, f.route, f.created_at
       FROM applications a LEFT JOIN functions f ON f.application_id = a.id
      WHERE a.id = $1 ORDER BY f.name`,
    [appId],
  )
  if (rows.length === 0) return null
  return rows.filter((row): row is FunctionRow => row.id !== null).map(toFunction)
}

export async function getFunction(db: Database, appId: string, fnId: string): Promise<FunctionT | null> {
  if (!isUuid(appId) || !isUuid(fnId)) return null
  const [row] = await db.query<FunctionRow>(`SELECT ${COLUMNS} FROM functions WHERE id = $1 AND application_id = $2`, [
    fnId,
    appId,
  ])
  return row === undefined ? null : toFunction(row)
}

/** A new function's first files, from its application's language (spin/src/templates.ts). */
export type Scaffold = (language: LanguageT, functionName: string) => Record<string, string>

/** Insert a function and its source (`files`, empty by default) inside the caller's transaction. */
export async function insertFunction(
  tx: Sql,
  appId: string,
  input: { name: string; route: string },
  files: Record<string, string> = {},
): Promise<FunctionT> {
  const [row] = await tx.query<FunctionRow>(
    `INSERT INTO functions (id, application_id, name, route) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
    [randomUUID(), appId, input.name, input.route],
  )
  const fn = toFunction(row as FunctionRow)
  await tx.query('INSERT INTO sources (function_id, files) VALUES ($1, $2)', [fn.id, JSON.stringify(files)])
  return fn
}

/** Null when the application does not exist. */
export async function createFunction(
  db: Database,
  appId: string,
  input: { name: string; route: string },
  scaffold?: Scaffold,
): Promise<FunctionT | null> {
  if (!isUuid(appId)) return null
  try {
    return await db.transaction(async (tx) => {
      let files: Record<string, string> = {}
      if (scaffold !== undefined) {
        const [app] = await tx.query<{ language: LanguageT }>('SELECT language FROM applications WHERE id = $1', [
          appId,
        ])
        if (app !== undefined) files = scaffold(app.language, input.name)
      }
      return insertFunction(tx, appId, input, files)
    })
  } catch (error) {
    // The application was never there, or was deleted while the function was being added.
    if (isForeignKeyViolation(error, 'functions_application_fkey')) return null
    throw conflictError(error, input) ?? error
  }
}

/** Null when there is no such function. */
export async function updateRoute(db: Database, appId: string, fnId: string, route: string): Promise<FunctionT | null> {
  if (!isUuid(appId) || !isUuid(fnId)) return null
  try {
    const [row] = await db.query<FunctionRow>(
      `UPDATE functions SET route = $3 WHERE id = $1 AND application_id = $2 RETURNING ${COLUMNS}`,
      [fnId, appId, route],
    )
    return row === undefined ? null : toFunction(row)
  } catch (error) {
    throw conflictError(error, { route }) ?? error
  }
}

/** False when there was no such function. Its source goes with it (ON DELETE CASCADE). */
export async function deleteFunction(db: Database, appId: string, fnId: string): Promise<boolean> {
  if (!isUuid(appId) || !isUuid(fnId)) return false
  const rows = await db.query('DELETE FROM functions WHERE id = $1 AND application_id = $2 RETURNING id', [fnId, appId])
  return rows.length > 0
}

function conflictError(error: unknown, input: { name?: string; route: string }): ConflictError | null {
  if (isUniqueViolation(error, 'functions_name_key'))
    return new ConflictError(`this application already has a function named ${input.name}`)
  if (isUniqueViolation(error, 'functions_route_key'))
    return new ConflictError(`another function of this application already has the route ${input.route}`)
  return null
}
