// Versioned schema changes, applied in order at start. Each runs once: schema_migrations
// records the versions applied, so running them again (a restart, a second replica) changes
// nothing. Never edit a migration that has shipped; add the next version instead.
import type { Database } from './db.js'

// One statement per string: PGlite runs one statement per query call, as PostgreSQL's extended
// protocol does.
export type Migration = { version: number; name: string; statements: string[] }

export const migrations: Migration[] = [
  {
    version: 1,
    name: 'applications, functions, sources and builds',
    // Constraint names are spelled out: the repositories map violations of them to 404 and 409.
    statements: [
      `
      CREATE TABLE applications (
        id uuid PRIMARY KEY,
        name text NOT NULL CONSTRAINT applications_name_key UNIQUE,
        language text NOT NULL,
        runtime text NOT NULL,
        description text NOT NULL DEFAULT '',
        created_at timestamptz NOT NULL DEFAULT now()
      )`,
      `
      CREATE TABLE functions (
        id uuid PRIMARY KEY,
        application_id uuid NOT NULL
          CONSTRAINT functions_application_fkey REFERENCES applications (id) ON DELETE CASCADE,
        name text NOT NULL,
        route text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT functions_name_key UNIQUE (application_id, name),
        CONSTRAINT functions_route_key UNIQUE (application_id, route)
      )`,
      `
      CREATE TABLE sources (
        function_id uuid PRIMARY KEY
          CONSTRAINT sources_function_fkey REFERENCES functions (id) ON DELETE CASCADE,
        files jsonb NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`,
      `
      CREATE TABLE builds (
        id uuid PRIMARY KEY,
        application_id uuid NOT NULL
          CONSTRAINT builds_application_fkey REFERENCES applications (id) ON DELETE CASCADE,
        status text NOT NULL
          CONSTRAINT builds_status_check CHECK (status IN ('pending', 'running', 'succeeded', 'failed')),
        image_ref text,
        error text,
        created_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz
      )`,
      `
      CREATE INDEX builds_application_created_idx ON builds (application_id, created_at DESC)`,
    ],
  },
  {
    version: 2,
    name: 'build logs kept after the build pod is gone',
    // NULL while the build runs (its pod has the log) and when it could not be read.
    statements: ['ALTER TABLE builds ADD COLUMN log text'],
  },
  {
    version: 3,
    name: 'tenants: names unique per tenant, cluster names unique everywhere',
    // Rows from before tenants belong to `default`, and keep their name in the cluster, so
    // what is deployed keeps running under the name it has.
    statements: [
      "ALTER TABLE applications ADD COLUMN tenant text NOT NULL DEFAULT 'default'",
      'ALTER TABLE applications ADD COLUMN cluster_name text',
      'UPDATE applications SET cluster_name = name',
      'ALTER TABLE applications ALTER COLUMN cluster_name SET NOT NULL',
      'ALTER TABLE applications ALTER COLUMN tenant DROP DEFAULT',
      'ALTER TABLE applications DROP CONSTRAINT applications_name_key',
      'ALTER TABLE applications ADD CONSTRAINT applications_name_key UNIQUE (tenant, name)',
      'ALTER TABLE applications ADD CONSTRAINT applications_cluster_name_key UNIQUE (cluster_name)',
    ],
  },
  {
    version: 4,
    name: 'builds record whether their Job was created',
    // Every replica reads this, where it used to read one process's memory: a build whose Job
    // is still being created is not one whose Job is lost. Older builds had their Job.
    statements: [
      'ALTER TABLE builds ADD COLUMN job_created boolean NOT NULL DEFAULT true',
      'ALTER TABLE builds ALTER COLUMN job_created SET DEFAULT false',
    ],
  },
  {
    version: 5,
    name: 'application settings: replicas, autoscaling, resources, variables; image sizes',
    // replicas NULL: the platform's setting, so changing it still reaches applications that
    // never chose. A variable's secret value is here only sealed (local runtime); in a cluster
    // it lives in a Secret and this holds `{"secret": true}`.
    statements: [
      'ALTER TABLE applications ADD COLUMN replicas integer',
      'ALTER TABLE applications ADD COLUMN autoscaling jsonb',
      "ALTER TABLE applications ADD COLUMN resources jsonb NOT NULL DEFAULT '{}'",
      "ALTER TABLE applications ADD COLUMN variables jsonb NOT NULL DEFAULT '{}'",
      'ALTER TABLE builds ADD COLUMN image_size_bytes bigint',
    ],
  },
  {
    version: 6,
    name: 'builds record when they were last deployed',
    // A re-locked image (the variables' names, in a cluster) matches no build's image_ref: this
    // says which build it came from. NULL: never deployed, or deployed before this was kept.
    statements: ['ALTER TABLE builds ADD COLUMN deployed_at timestamptz'],
  },
  {
    version: 7,
    name: "applications' concurrency on the shared worker",
    // Empty: the platform's values (--local-max-concurrent-requests and
    // --local-max-queued-requests) as they are at each deploy, as for every application before.
    statements: ["ALTER TABLE applications ADD COLUMN concurrency jsonb NOT NULL DEFAULT '{}'"],
  },
  {
    version: 8,
    name: 'deployments as desired state: generations, what was applied, conditions',
    // What should run is the newest successful build's image with the settings' and variables'
    // generations, bumped in the statement that changes them; `generation` is bumped by POST
    // deploy. `applied` is what the last apply that held was given (NULL: never, or before this
    // was kept: the first reconcile applies it again, which changes nothing that runs). The lease
    // lets one replica reconcile an application at a time without holding a transaction open.
    statements: [
      'ALTER TABLE applications ADD COLUMN settings_generation bigint NOT NULL DEFAULT 1',
      'ALTER TABLE applications ADD COLUMN variables_generation bigint NOT NULL DEFAULT 1',
      `
      CREATE TABLE deployments (
        application_id uuid PRIMARY KEY
          CONSTRAINT deployments_application_fkey REFERENCES applications (id) ON DELETE CASCADE,
        generation bigint NOT NULL DEFAULT 1,
        applied jsonb,
        conditions jsonb NOT NULL DEFAULT '[]',
        failures integer NOT NULL DEFAULT 0,
        retry_at timestamptz,
        lease_holder text,
        lease_until timestamptz
      )`,
    ],
  },
]

// Any constant works; it only has to be the same in every replica.
const MIGRATION_LOCK = 7_302_145_001

/**
 * Apply the migrations `db` lacks, all in one transaction under an advisory lock, so two
 * processes starting together cannot both apply one. Resolves with the versions applied now.
 */
export async function migrate(db: Database, list: Migration[] = migrations): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    await tx.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`)
    const rows = await tx.query<{ version: number }>('SELECT version FROM schema_migrations')
    const done = new Set(rows.map((row) => row.version))
    const applied: number[] = []
    for (const migration of [...list].sort((a, b) => a.version - b.version)) {
      if (done.has(migration.version)) continue
      for (const statement of migration.statements) await tx.query(statement)
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ])
      applied.push(migration.version)
    }
    return applied
  })
}
