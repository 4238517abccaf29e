// Each application's deployment as desired state (migration 8): what should run, read from the
// rows that decide it (the newest successful build, the settings' and variables' generations,
// POST deploy's generation), what the last apply that held was given, the conditions every
// replica answers with, and the lease that lets one replica at a time reconcile it.
import type { ConditionT } from '../model/resources.js'
import type { Database } from './db.js'
import { isUuid } from './db.js'

/** What one apply brings to run: compared with what was applied last to know whether to apply. */
export type Target = { image: string; settingsGeneration: number; variablesGeneration: number; generation: number }

/** A target applied, with what the runtime said it applied (what `drifted` compares what runs with). */
export type Applied = Target & { runtime: Record<string, unknown> }

export type DeploymentState = {
  applied: Applied | null
  conditions: ConditionT[]
  /** Applies failed in a row, and when the next is due (null: none failed since the last that held). */
  failures: number
  retryAt: Date | null
}

/** What should run for the application now; `image` null until a build succeeded. */
export type Desired = { target: Target | null; state: DeploymentState }

type StateRow = {
  generation: string | number
  applied: Applied | null
  conditions: ConditionT[]
  failures: number
  retry_at: Date | null
}

// pg gives bigint as text.
const toState = (row: StateRow): DeploymentState => ({
  applied: row.applied,
  conditions: row.conditions,
  failures: row.failures,
  retryAt: row.retry_at,
})

/** The row of an application that has none yet (every application gets one at its first reconcile). */
async function ensureRow(db: Database, appId: string): Promise<void> {
  await db.query(
    'INSERT INTO deployments (application_id) SELECT id FROM applications WHERE id = $1 ON CONFLICT DO NOTHING',
    [appId],
  )
}

/** What should run and what was applied; null when there is no such application. */
export async function readDesired(db: Database, appId: string): Promise<Desired | null> {
  if (!isUuid(appId)) return null
  type Row = StateRow & {
    settings_generation: string | number
    variables_generation: string | number
    image: string | null
    has_row: boolean
  }
  const read = async (): Promise<Row | undefined> =>
    (
      await db.query<Row>(
        `SELECT d.generation, d.applied, COALESCE(d.conditions, '[]') AS conditions, COALESCE(d.failures, 0) AS failures,
            d.retry_at, a.settings_generation, a.variables_generation, d.application_id IS NOT NULL AS has_row,
            (SELECT image_ref FROM builds b WHERE b.application_id = a.id AND b.status = 'succeeded'
              ORDER BY b.finished_at DESC, b.created_at DESC LIMIT 1) AS image
          FROM applications a LEFT JOIN deployments d ON d.application_id = a.id WHERE a.id = $1`,
        [appId],
      )
    )[0]
  // A write only for an application never reconciled: a resync reads, and on PGlite a write
  // would drop every kept read (store/db.ts).
  let row = await read()
  if (row !== undefined && !row.has_row) {
    await ensureRow(db, appId)
    row = await read()
  }
  if (row === undefined) return null
  return {
    target:
      row.image === null
        ? null
        : {
            image: row.image,
            settingsGeneration: Number(row.settings_generation),
            variablesGeneration: Number(row.variables_generation),
            generation: Number(row.generation),
          },
    state: toState(row),
  }
}

/** The stored state alone (null: never reconciled, or no such application). */
export async function readState(db: Database, appId: string): Promise<DeploymentState | null> {
  if (!isUuid(appId)) return null
  const [row] = await db.query<StateRow>(
    'SELECT generation, applied, conditions, failures, retry_at FROM deployments WHERE application_id = $1',
    [appId],
  )
  return row === undefined ? null : toState(row)
}

/** Applications with a successful build whose retry is not in the future: what a resync looks at. */
export async function dueApplications(db: Database): Promise<string[]> {
  const rows = await db.query<{ id: string }>(
    `SELECT a.id FROM applications a LEFT JOIN deployments d ON d.application_id = a.id
      WHERE EXISTS (SELECT 1 FROM builds b WHERE b.application_id = a.id AND b.status = 'succeeded')
        AND (d.retry_at IS NULL OR d.retry_at <= now())
      ORDER BY a.created_at`,
  )
  return rows.map((row) => row.id)
}

/** POST deploy: apply again even when nothing changed. False when there is no such application. */
export async function bumpGeneration(db: Database, appId: string): Promise<boolean> {
  if (!isUuid(appId)) return false
  await ensureRow(db, appId)
  const rows = await db.query(
    'UPDATE deployments SET generation = generation + 1 WHERE application_id = $1 RETURNING 1',
    [appId],
  )
  return rows.length > 0
}

/**
 * Take (or renew) the application's lease for `ms`: false while another holder's has not
 * expired. A holder that dies leaves it to expire, so nothing waits on it for longer than `ms`.
 * An application never reconciled has no row yet and gets one here: without it, removing an
 * application that never ran waited out a whole lease for a row nobody would write. One gone
 * already needs no lease: true, and what runs under it finds nothing.
 */
export async function takeLease(db: Database, appId: string, holder: string, ms: number): Promise<boolean> {
  if (!isUuid(appId)) return true
  const [row] = await db.query<{ taken: boolean }>(
    `WITH app AS (SELECT id FROM applications WHERE id = $1),
      taken AS (
        INSERT INTO deployments (application_id, lease_holder, lease_until)
          SELECT id, $2, now() + make_interval(secs => $3::double precision / 1000) FROM app
        ON CONFLICT (application_id) DO UPDATE SET lease_holder = EXCLUDED.lease_holder, lease_until = EXCLUDED.lease_until
          WHERE deployments.lease_until IS NULL OR deployments.lease_until < now() OR deployments.lease_holder = $2
        RETURNING 1)
      SELECT EXISTS (SELECT 1 FROM taken) OR NOT EXISTS (SELECT 1 FROM app) AS taken`,
    [appId, holder, ms],
  )
  return row?.taken === true
}

export async function releaseLease(db: Database, appId: string, holder: string): Promise<void> {
  await db.query(
    'UPDATE deployments SET lease_holder = NULL, lease_until = NULL WHERE application_id = $1 AND lease_holder = $2',
    [appId, holder],
  )
}

/** An apply that held: what it applied, its conditions, no failure pending. */
export async function recordApplied(
  db: Database,
  appId: string,
  applied: Applied,
  conditions: ConditionT[],
): Promise<void> {
  await db.query(
    'UPDATE deployments SET applied = $2, conditions = $3, failures = 0, retry_at = NULL WHERE application_id = $1',
    [appId, JSON.stringify(applied), JSON.stringify(conditions)],
  )
}

/** An apply that failed: its reason in the conditions, and when the next one is due. */
export async function recordFailure(
  db: Database,
  appId: string,
  failures: number,
  retryAt: Date,
  conditions: ConditionT[],
): Promise<void> {
  await db.query('UPDATE deployments SET conditions = $2, failures = $3, retry_at = $4 WHERE application_id = $1', [
    appId,
    JSON.stringify(conditions),
    failures,
    retryAt,
  ])
}

export async function recordConditions(db: Database, appId: string, conditions: ConditionT[]): Promise<void> {
  if (!isUuid(appId)) return
  await db.query('UPDATE deployments SET conditions = $2 WHERE application_id = $1', [
    appId,
    JSON.stringify(conditions),
  ])
}
