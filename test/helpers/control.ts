// The control plane under test: the real server (database opened and migrated, HTTP on
// 127.0.0.1 and a free port) on a fresh database of its own, on each available engine.
// PGlite always runs; PostgreSQL too when TEST_DATABASE_URL is set (scripts/test-postgres.sh),
// each test in a schema of its own so tests never see each other's rows.
import { randomBytes } from 'node:crypto'
import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import type { Test } from 'tap'
import { parseConfig } from '@session-relay/control/config'
import type { ControlConfig } from '@session-relay/control/config'
import { createLogger } from '@session-relay/control/logger'
import { startControlPlane } from '@session-relay/control/server'
import type { ControlServer, ServerDeps } from '@session-relay/control/server'
import { until } from './wait.js'

export type Engine = 'pglite' | 'postgres'

const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? ''

export const ENGINES: Engine[] = POSTGRES_URL === '' ? ['pglite'] : ['pglite', 'postgres']

/** Registers `name` once per engine, as subtests named `name [engine]`. */
export function eachEngine(t: Test, name: string, fn: (t: Test, engine: Engine) => Promise<void>): void {
  for (const engine of ENGINES) t.test(`${name} [${engine}]`, (t) => fn(t, engine))
}

/** Where a test's data lives: the settings that point the control plane at it. */
export type Store = { engine: Engine; databaseUrl: string; dataDir: string }

/** An empty database for this test, removed when it ends. */
export async function freshStore(t: Test, engine: Engine): Promise<Store> {
  // Not t.testdir(): copying into the working tree takes several times longer than into tmpdir.
  const dir = mkdtempSync(join(tmpdir(), 'control-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const dataDir = join(dir, 'data')
  if (engine === 'pglite') {
    // initdb in WebAssembly takes seconds; a copy of a pristine data directory a fraction of one.
    cpSync(await pgliteTemplate(), dataDir, { recursive: true })
    return { engine, databaseUrl: '', dataDir }
  }
  const schema = `test_${randomBytes(6).toString('hex')}`
  await adminQuery(`CREATE SCHEMA ${schema}`)
  t.teardown(() => adminQuery(`DROP SCHEMA ${schema} CASCADE`))
  const url = new URL(POSTGRES_URL)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return { engine, databaseUrl: url.toString(), dataDir }
}

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL })
  await client.connect()
  try {
    await client.query(sql)
  } finally {
    await client.end()
  }
}

/** A PGlite data directory fresh from initdb, made once per machine and PGlite version. */
async function pgliteTemplate(): Promise<string> {
  const manifest = JSON.parse(readFileSync(new URL('../../control/package.json', import.meta.url), 'utf8')) as {
    dependencies: Record<string, string>
  }
  const version = manifest.dependencies['@electric-sql/pglite']
  const template = join(tmpdir(), `control-test-pglite-${version}`)
  if (existsSync(template)) return template
  const staging = mkdtempSync(`${template}.staging-`)
  const { PGlite } = await import('@electric-sql/pglite')
  await (await PGlite.create(staging)).close()
  try {
    renameSync(staging, template) // atomic: a concurrent test file may have won the race
  } catch {
    rmSync(staging, { recursive: true, force: true })
  }
  return template
}

export type Reply = { status: number; headers: Headers; text: string; body: unknown }

export type TestControl = {
  config: ControlConfig
  store: Store
  server: ControlServer
  /** http://127.0.0.1:port */
  url: string
  /** Every log line written so far, parsed. */
  readonly logs: Array<Record<string, unknown>>
  logText(): string
  /** A request to `/api/v1{path}` (or to `path` as is when it starts with `/healthz`); JSON bodies are encoded and decoded. */
  call(method: string, path: string, opts?: CallOptions): Promise<Reply>
  close(): Promise<void>
}

export type CallOptions = {
  json?: unknown
  body?: RequestInit['body']
  token?: string
  headers?: Record<string, string>
}

/**
 * The control plane from the same flags the binary takes, on 127.0.0.1 and a free port, with
 * its logs captured. Auth is off unless `flags` configure it. Closed when the test ends.
 */
export async function startTestControl(
  t: Test,
  engine: Engine,
  flags: string[] = ['--dev-insecure-skip-auth'],
  opts: { store?: Store; deps?: Omit<ServerDeps, 'logger'> } = {},
): Promise<TestControl> {
  const store = opts.store ?? (await freshStore(t, engine))
  const config = parseConfig(
    ['--addr', '127.0.0.1:0', '--data-dir', store.dataDir, '--database-url', store.databaseUrl, ...flags],
    {},
  )
  const lines: string[] = []
  const logger = createLogger(config.logLevel, {
    write: (line: string) => {
      lines.push(line)
    },
  })
  const server = await startControlPlane(config, { logger, ...opts.deps })
  let closed: Promise<void> | null = null
  const close = (): Promise<void> => (closed ??= server.close())
  t.teardown(close)
  const url = `http://127.0.0.1:${server.port}`
  return {
    config,
    store,
    server,
    url,
    get logs() {
      return lines.map((line) => JSON.parse(line) as Record<string, unknown>)
    },
    logText: () => lines.join(''),
    call: (method, path, callOptions = {}) => call(url, method, path, callOptions),
    close,
  }
}

export async function call(base: string, method: string, path: string, opts: CallOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers }
  let body = opts.body
  if (opts.json !== undefined) {
    headers['content-type'] ??= 'application/json'
    body = typeof opts.json === 'string' ? opts.json : JSON.stringify(opts.json)
  }
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`
  const target = path.startsWith('/healthz') ? path : `/api/v1${path}`
  const response = await fetch(`${base}${target}`, { method, headers, ...(body !== undefined ? { body } : {}) })
  const bytes = Buffer.from(await response.arrayBuffer())
  const text = bytes.toString('utf8')
  const isJson = response.headers.get('content-type')?.startsWith('application/json') === true
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: isJson && text !== '' ? JSON.parse(text) : bytes,
  }
}

export type App = {
  id: string
  name: string
  tenant: string
  language: string
  runtime: string
  description: string
  createdAt: string
  functions: Fn[]
}
export type Fn = { id: string; name: string; route: string; createdAt?: string }

/** Create an application (a go one named `name` unless `fields` say otherwise); fails the test on anything but 201. */
export async function createApp(
  control: TestControl,
  name = 'hello',
  fields: Record<string, unknown> = {},
  call: CallOptions = {},
): Promise<App> {
  const reply = await control.call('POST', '/applications', {
    ...call,
    json: { name, language: 'go', runtime: 'wasmkube', ...fields },
  })
  if (reply.status !== 201) throw new Error(`create application answered ${reply.status}: ${reply.text}`)
  return reply.body as App
}

/** The application's first function (created with it). */
export function firstFunction(app: App): Fn {
  const fn = app.functions[0]
  if (fn === undefined) throw new Error('application without functions')
  return fn
}

/** True when `body` is exactly `{"error": "<non-empty reason>"}`. */
export function isErrorBody(body: unknown): boolean {
  return (
    typeof body === 'object' &&
    body !== null &&
    !Buffer.isBuffer(body) &&
    Object.keys(body).join() === 'error' &&
    typeof (body as { error: unknown }).error === 'string' &&
    (body as { error: string }).error !== ''
  )
}

export { until } from './wait.js'

/** A build as GET /builds/{id} shows it. */
export type BuildView = { id: string; status: string; imageRef: string | null; error: string | null }

/** Start a build of the application (202) and wait until it has succeeded or failed. */
export async function buildAndWait(
  t: Test,
  control: TestControl,
  appId: string,
  timeoutMs: number,
): Promise<BuildView> {
  const started = await control.call('POST', `/applications/${appId}/builds`)
  t.equal(started.status, 202, started.text)
  const id = (started.body as BuildView).id
  let build: BuildView | undefined
  await until(
    async () => {
      build = (await control.call('GET', `/applications/${appId}/builds/${id}`)).body as BuildView
      return build.status === 'succeeded' || build.status === 'failed'
    },
    timeoutMs,
    'the build to end',
  )
  return build as BuildView
}

/** Wait until the application's deployment answers ready (GET /applications/{id}). */
export async function untilDeployed(control: TestControl, appId: string, timeoutMs = 120_000): Promise<void> {
  await until(
    async () =>
      ((await control.call('GET', `/applications/${appId}`)).body as { deployment: { ready: boolean } | null })
        .deployment?.ready === true,
    timeoutMs,
    'the build deployed',
  )
}
