// Function sources in the database: one row per function holding the whole file map as jsonb,
// so replacing it is one UPDATE: readers see the old map or the new one, never a mix.
import type { SourceT } from '../model/resources.js'
import { sortedFiles } from '@session-relay/spin/source/files'
import type { Database } from './db.js'
import { iso, isUuid } from './db.js'

type SourceRow = { files: Record<string, string>; updated_at: Date }

function toSource(row: SourceRow): SourceT {
  return { files: sortedFiles(row.files), updatedAt: iso(row.updated_at) }
}

/** Null when there is no such function. */
export async function getSource(db: Database, appId: string, fnId: string): Promise<SourceT | null> {
  if (!isUuid(appId) || !isUuid(fnId)) return null
  const [row] = await db.query<SourceRow>(
    `SELECT s.files, s.updated_at FROM sources s JOIN functions f ON f.id = s.function_id
      WHERE f.id = $1 AND f.application_id = $2`,
    [fnId, appId],
  )
  return row === undefined ? null : toSource(row)
}

/** Every function of the application with its files, by name: what a build packs. */
export async function functionSources(
  db: Database,
  appId: string,
): Promise<Array<{ name: string; route: string; files: Record<string, string> }>> {
  return db.query<{ name: string; route: string; files: Record<string, string> }>(
    'SELECT f.name, f.route, s.files FROM functions f JOIN sources s ON s.function_id = f.id WHERE f.application_id = $1 ORDER BY f.name',
    [appId],
  )
}

/** Replace the whole file map; null when there is no such function. The files must have passed checkFiles. */
export async function replaceSource(
  db: Database,
  appId: string,
  fnId: string,
  files: Record<string, string>,
): Promise<SourceT | null> {
  if (!isUuid(appId) || !isUuid(fnId)) return null
  const [row] = await db.query<SourceRow>(
    `UPDATE sources s SET files = $3, updated_at = now() FROM functions f
      WHERE s.function_id = f.id AND f.id = $1 AND f.application_id = $2
      RETURNING s.files, s.updated_at`,
    [fnId, appId, JSON.stringify(files)],
  )
  return row === undefined ? null : toSource(row)
}
