// Applications in the database. Creating one also creates its first function (named after it,
// route "/...") with the source the caller scaffolds (empty without one), in the same transaction; deleting one removes its
// functions, sources and builds through the foreign keys' ON DELETE CASCADE, in one statement.
// Names are unique per tenant; the name in the cluster (SpinApp, Service, pod label, image)
// is unique across all of them, so one tenant's can never be taken for another's.
import { randomBytes, randomUUID } from 'node:crypto'
import { ConflictError } from '@session-relay/common/errors'
import type { AppSettings, AutoscalingT, ConcurrencyT, ResourcesT, StoredVariable } from '../model/app-settings.js'
import type { ApplicationSummaryT, BuildT, FunctionT, LanguageT, RuntimeT } from '../model/resources.js'
import { listBuilds } from './builds.js'
import type { Database } from './db.js'
import { iso, isUniqueViolation, isUuid } from './db.js'
import type { Scaffold } from './functions.js'
import { insertFunction } from './functions.js'

const FIRST_FUNCTION_ROUTE = '/...'

export type NewApplication = {
  name: string
  tenant: string
  language: LanguageT
  runtime: RuntimeT
  description?: string | undefined
}

/** An application as the layers below the API know it: also the name it has in the cluster, and its settings as stored. */
export type StoredApplication = ApplicationSummaryT & { clusterName: string; settings: AppSettings }

/** With its functions and builds (newest first). */
export type StoredApplicationDetail = StoredApplication & {
  functions: Array<Pick<FunctionT, 'id' | 'name' | 'route'>>
  builds: BuildT[]
}

type ApplicationRow = {
  id: string
  name: string
  tenant: string
  cluster_name: string
  language: LanguageT
  runtime: RuntimeT
  description: string
  created_at: Date
  replicas: number | null
  autoscaling: AutoscalingT | null
  resources: ResourcesT
  concurrency: ConcurrencyT
  variables: Record<string, StoredVariable>
}

const COLUMNS =
  'id, name, tenant, cluster_name, language, runtime, description, created_at, replicas, autoscaling, resources, concurrency, variables'

const A_COLUMNS = COLUMNS.split(', ')
  .map((column) => `a.${column}`)
  .join(', ')

/** The tenant whose applications keep their own name in the cluster (all of them before tenants). */
const PLAIN_TENANT = 'default'

function toSummary(row: ApplicationRow): StoredApplication {
  return {
    id: row.id,
    name: row.name,
    tenant: row.tenant,
    language: row.language,
    runtime: row.runtime,
    description: row.description,
    createdAt: iso(row.created_at),
    clusterName: row.cluster_name,
    settings: {
      replicas: row.replicas,
      autoscaling: row.autoscaling,
      resources: row.resources,
      concurrency: row.concurrency,
      variables: row.variables,
    },
  }
}

/**
 * The application's name in the cluster. The default tenant's keep their own (what ran before
 * tenants keeps running); any other's get a random suffix, which nobody can aim at in advance,
 * and the unique constraint refuses what chance would still make collide. 52 + 1 + 10 = 63,
 * the longest DNS label.
 */
function clusterNameFor(tenant: string, name: string): string {
  return tenant === PLAIN_TENANT ? name : `${name.slice(0, 52).replace(/-+$/, '')}-${randomBytes(5).toString('hex')}`
}

/** Every application, by name; only those of `tenants` unless it is null (all). */
export async function listApplications(db: Database, tenants: string[] | null): Promise<StoredApplication[]> {
  const rows =
    tenants === null
      ? await db.query<ApplicationRow>(`SELECT ${COLUMNS} FROM applications ORDER BY name, tenant`)
      : await db.query<ApplicationRow>(
          `SELECT ${COLUMNS} FROM applications WHERE tenant = ANY($1::text[]) ORDER BY name, tenant`,
          [tenants],
        )
  return rows.map(toSummary)
}

// Every request under an application reads its tenant first (domain/access.ts), and an invoke
// its function's route: in PGlite each read costs about a third of an invoke's checks, so
// both are kept until the next write (db.ts).

/** The application's tenant; null when it does not exist. */
export async function applicationTenant(db: Database, id: string): Promise<string | null> {
  if (!isUuid(id)) return null
  return db.kept(`tenant ${id}`, async () => {
    const [row] = await db.query<{ tenant: string }>('SELECT tenant FROM applications WHERE id = $1', [id])
    return row?.tenant ?? null
  })
}

/** The application with the route of its function `fnId`, in one read (an invoke's); null when either does not exist. */
export async function findApplicationWithRoute(
  db: Database,
  appId: string,
  fnId: string,
): Promise<{ application: StoredApplication; route: string } | null> {
  if (!isUuid(appId) || !isUuid(fnId)) return null
  return db.kept(`route ${appId} ${fnId}`, async () => {
    const [row] = await db.query<ApplicationRow & { fn_route: string }>(
      `SELECT ${A_COLUMNS}, f.route AS fn_route FROM applications a JOIN functions f ON f.application_id = a.id WHERE a.id = $1 AND f.id = $2`,
      [appId, fnId],
    )
    return row === undefined ? null : { application: toSummary(row), route: row.fn_route }
  })
}

export async function getApplication(db: Database, id: string): Promise<StoredApplicationDetail | null> {
  if (!isUuid(id)) return null
  const [row] = await db.query<ApplicationRow>(`SELECT ${COLUMNS} FROM applications WHERE id = $1`, [id])
  if (row === undefined) return null
  const functions = await db.query<{ id: string; name: string; route: string }>(
    'SELECT id, name, route FROM functions WHERE application_id = $1 ORDER BY name',
    [id],
  )
  // An application deleted between the two reads has no builds: an empty list, not an error.
  const builds = (await listBuilds(db, id)) ?? []
  return { ...toSummary(row), functions, builds }
}

/** The application's name in the cluster; null when it does not exist. */
export async function clusterName(db: Database, id: string): Promise<string | null> {
  if (!isUuid(id)) return null
  const [row] = await db.query<{ cluster_name: string }>('SELECT cluster_name FROM applications WHERE id = $1', [id])
  return row?.cluster_name ?? null
}

/** The tenant of the application with this cluster name; null when there is none. */
export async function tenantOfClusterName(db: Database, name: string): Promise<string | null> {
  const [row] = await db.query<{ tenant: string }>('SELECT tenant FROM applications WHERE cluster_name = $1', [name])
  return row?.tenant ?? null
}

/** The tenants with an application deployed (some build of it applied): whose pods pull images. */
export async function deployedTenants(db: Database): Promise<string[]> {
  const rows = await db.query<{ tenant: string }>(
    `SELECT DISTINCT a.tenant FROM applications a
      WHERE EXISTS (SELECT 1 FROM builds b WHERE b.application_id = a.id AND b.deployed_at IS NOT NULL)
      ORDER BY a.tenant`,
  )
  return rows.map((row) => row.tenant)
}

export async function createApplication(
  db: Database,
  input: NewApplication,
  scaffold?: Scaffold,
): Promise<StoredApplicationDetail> {
  const id = randomUUID()
  try {
    return await db.transaction(async (tx) => {
      const [row] = await tx.query<ApplicationRow>(
        `INSERT INTO applications (id, name, tenant, cluster_name, language, runtime, description) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${COLUMNS}`,
        [
          id,
          input.name,
          input.tenant,
          clusterNameFor(input.tenant, input.name),
          input.language,
          input.runtime,
          input.description ?? '',
        ],
      )
      const fn = await insertFunction(
        tx,
        id,
        { name: input.name, route: FIRST_FUNCTION_ROUTE },
        scaffold?.(input.language, input.name) ?? {},
      )
      return {
        ...toSummary(row as ApplicationRow),
        functions: [{ id: fn.id, name: fn.name, route: fn.route }],
        builds: [],
      }
    })
  } catch (error) {
    if (isUniqueViolation(error, 'applications_name_key'))
      throw new ConflictError(`an application named ${input.name} already exists`)
    // Only a default-tenant name equal to another tenant's suffixed one, by a 1 in 2^40 chance.
    if (isUniqueViolation(error, 'applications_cluster_name_key'))
      throw new ConflictError(`the name ${input.name} is taken in the cluster; choose another`)
    throw error
  }
}

/** False when there was no such application. */
export async function deleteApplication(db: Database, id: string): Promise<boolean> {
  if (!isUuid(id)) return false
  const rows = await db.query('DELETE FROM applications WHERE id = $1 RETURNING id', [id])
  return rows.length > 0
}

/** The application without its functions and builds; null when there is none. */
export async function findApplication(db: Database, id: string): Promise<StoredApplication | null> {
  if (!isUuid(id)) return null
  const [row] = await db.query<ApplicationRow>(`SELECT ${COLUMNS} FROM applications WHERE id = $1`, [id])
  return row === undefined ? null : toSummary(row)
}

/** The settings a PATCH changes: only the fields given. The application as it is after; null when there is none. */
export async function updateSettings(
  db: Database,
  id: string,
  change: Partial<AppSettings> & { description?: string },
): Promise<StoredApplication | null> {
  if (!isUuid(id)) return null
  const sets: string[] = []
  const values: unknown[] = [id]
  const set = (column: string, value: unknown): void => {
    values.push(value)
    sets.push(`${column} = $${values.length}`)
  }
  if (change.description !== undefined) set('description', change.description)
  if (change.replicas !== undefined) set('replicas', change.replicas)
  // JSON columns get text: the driver would send a JS null as SQL NULL either way, and an object as JSON.
  if (change.autoscaling !== undefined)
    set('autoscaling', change.autoscaling === null ? null : JSON.stringify(change.autoscaling))
  if (change.resources !== undefined) set('resources', JSON.stringify(change.resources))
  if (change.concurrency !== undefined) set('concurrency', JSON.stringify(change.concurrency))
  if (change.variables !== undefined) set('variables', JSON.stringify(change.variables))
  // What runs changes with these: the reconcile (domain/reconcile.ts) applies a new generation.
  const runs = [change.replicas, change.autoscaling, change.resources, change.concurrency]
  if (runs.some((value) => value !== undefined)) sets.push('settings_generation = settings_generation + 1')
  if (change.variables !== undefined) sets.push('variables_generation = variables_generation + 1')
  const [row] =
    sets.length === 0
      ? await db.query<ApplicationRow>(`SELECT ${COLUMNS} FROM applications WHERE id = $1`, [id])
      : await db.query<ApplicationRow>(
          `UPDATE applications SET ${sets.join(', ')} WHERE id = $1 RETURNING ${COLUMNS}`,
          values,
        )
  return row === undefined ? null : toSummary(row)
}
