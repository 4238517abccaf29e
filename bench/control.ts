// npm run bench:control -- [--database-url postgres://...] [--applications 1000]
//   [--duration 10s] [--warmup 2s] [--connections 10] [--json]
//
// Read throughput and latency of the control plane with `applications` applications stored:
// list applications, get one application, get one function's source. The control plane runs
// as the compiled binary in its own process (auth off, logs at info to /dev/null, as in
// production minus the disk), autocannon in this one. Always on embedded PGlite; also on
// PostgreSQL when a database URL is given (or TEST_DATABASE_URL is set, e.g. after
// `source scripts/test-postgres.sh`), in a schema of its own that is dropped afterwards.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import pg from 'pg'
import { formatDuration, parseDuration } from '@session-relay/common/config/duration'
import { freePort } from './servers.js'

type Options = {
  databaseUrl: string
  applications: number
  durationMs: number
  warmupMs: number
  connections: number
  json: boolean
}

type Row = {
  engine: string
  endpoint: string
  requestsPerSec: number
  p50Ms: number
  p90Ms: number
  p99Ms: number
  maxMs: number
  bytesPerResponse: number
  errors: number
}

const mainJs = fileURLToPath(new URL('../../control/dist/main.js', import.meta.url))

function parseArgs(argv: string[]): Options {
  const options: Options = {
    databaseUrl: process.env.TEST_DATABASE_URL ?? '',
    applications: 1000,
    durationMs: 10_000,
    warmupMs: 2_000,
    connections: 10,
    json: false,
  }
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = (argv[i] as string).split(/=(.*)/s) as [string, string | undefined]
    const value = (): string => inline ?? argv[++i] ?? ''
    switch (flag) {
      case '--database-url':
        options.databaseUrl = value()
        break
      case '--applications':
        options.applications = Number(value())
        break
      case '--duration':
        options.durationMs = parseDuration(value())
        break
      case '--warmup':
        options.warmupMs = parseDuration(value())
        break
      case '--connections':
        options.connections = Number(value())
        break
      case '--json':
        options.json = true
        break
      default:
        throw new Error(`unknown flag ${flag}`)
    }
  }
  if (!Number.isInteger(options.applications) || options.applications < 1)
    throw new Error('--applications must be a positive integer')
  return options
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2))
  const engines = options.databaseUrl === '' ? ['pglite'] : ['pglite', 'postgres']
  const rows: Row[] = []
  for (const engine of engines) rows.push(...(await benchEngine(engine, options)))
  if (options.json) {
    process.stdout.write(
      JSON.stringify({ machine: machine(), options: { ...options, databaseUrl: undefined }, rows }, null, 2) + '\n',
    )
    return
  }
  process.stdout.write(`\n${machine().line}\n`)
  process.stdout.write(
    `${options.applications} applications, ${options.connections} connections, ${formatDuration(options.durationMs)} per endpoint after ${formatDuration(options.warmupMs)} of warm-up\n\n`,
  )
  process.stdout.write('| engine | endpoint | req/s | p50 ms | p90 ms | p99 ms | max ms | bytes/response | errors |\n')
  process.stdout.write('|---|---|---:|---:|---:|---:|---:|---:|---:|\n')
  for (const r of rows) {
    process.stdout.write(
      `| ${r.engine} | ${r.endpoint} | ${Math.round(r.requestsPerSec)} | ${r.p50Ms} | ${r.p90Ms} | ${r.p99Ms} | ${r.maxMs} | ${r.bytesPerResponse} | ${r.errors} |\n`,
    )
  }
}

async function benchEngine(engine: string, options: Options): Promise<Row[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-control-'))
  let databaseUrl = ''
  let dropSchema = async (): Promise<void> => {}
  if (engine === 'postgres') {
    const schema = `bench_${randomBytes(4).toString('hex')}`
    await adminQuery(options.databaseUrl, `CREATE SCHEMA ${schema}`)
    dropSchema = () => adminQuery(options.databaseUrl, `DROP SCHEMA ${schema} CASCADE`)
    const url = new URL(options.databaseUrl)
    url.searchParams.set('options', `-c search_path=${schema}`)
    databaseUrl = url.toString()
  }
  const server = await startServer(dataDir, databaseUrl)
  try {
    log(`${engine}: storing ${options.applications} applications`)
    const target = await seed(server.url, options.applications)
    const endpoints: Array<[string, string]> = [
      ['GET /applications', '/api/v1/applications'],
      ['GET /applications/{id}', `/api/v1/applications/${target.appId}`],
      ['GET .../functions/{id}/source', `/api/v1/applications/${target.appId}/functions/${target.fnId}/source`],
    ]
    const rows: Row[] = []
    for (const [endpoint, path] of endpoints) {
      log(`${engine}: ${endpoint}`)
      await run(server.url + path, options.connections, options.warmupMs)
      const result = await run(server.url + path, options.connections, options.durationMs)
      rows.push({
        engine,
        endpoint,
        requestsPerSec: result.requests.average,
        p50Ms: result.latency.p50,
        p90Ms: result.latency.p90,
        p99Ms: result.latency.p99,
        maxMs: result.latency.max,
        bytesPerResponse: Math.round(result.throughput.total / Math.max(1, result.requests.total)),
        errors: result.errors + result.non2xx + result.timeouts,
      })
    }
    return rows
  } finally {
    await server.stop()
    await dropSchema()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

/** `count` applications (each with its first function), and a realistic source on one of them. */
async function seed(base: string, count: number): Promise<{ appId: string; fnId: string }> {
  let next = 0
  const ids: Array<{ appId: string; fnId: string }> = []
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++
      const response = await fetch(`${base}/api/v1/applications`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          name: `app-${String(i).padStart(5, '0')}`,
          language: 'go',
          runtime: 'wasmkube',
          description: `benchmark application ${i}`,
        }),
      })
      if (response.status !== 201) throw new Error(`seeding answered ${response.status}: ${await response.text()}`)
      const app = (await response.json()) as { id: string; functions: Array<{ id: string }> }
      ids[i] = { appId: app.id, fnId: app.functions[0]!.id }
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  const target = ids[Math.floor(count / 2)]!
  // Six files, about 12 KiB: a small Go function with its module files and a README.
  const files = {
    'go.mod': 'module example.com/hello\n\ngo 1.22\n',
    'go.sum': 'github.com/fermyon/spin/sdk/go/v2 v2.2.0 h1:abc=\n'.repeat(20),
    'main.go': `package main\n\n${'// handler code\n'.repeat(300)}`,
    'internal/util/util.go': `package util\n\n${'func f() {}\n'.repeat(200)}`,
    'spin.toml': 'spin_manifest_version = 2\n',
    'README.md': '# hello\n'.repeat(100),
  }
  const put = await fetch(`${base}/api/v1/applications/${target.appId}/functions/${target.fnId}/source`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ files }),
  })
  if (put.status !== 200) throw new Error(`source PUT answered ${put.status}`)
  return target
}

function run(url: string, connections: number, durationMs: number): Promise<autocannon.Result> {
  return autocannon({ url, connections, duration: durationMs / 1000 })
}

async function startServer(dataDir: string, databaseUrl: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort()
  const child: ChildProcess = spawn(
    process.execPath,
    [mainJs, '--dev-insecure-skip-auth', '--addr', `127.0.0.1:${port}`, '--data-dir', dataDir],
    {
      env: { ...process.env, PLATFORM_DATABASE_URL: databaseUrl, PLATFORM_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  )
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the control plane exited with code ${child.exitCode}`)
    try {
      if ((await fetch(`${url}/healthz`)).ok) break
    } catch {}
    if (Date.now() > deadline) throw new Error('the control plane did not start within 60 s')
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM')
      await exited
    },
  }
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(sql)
  } finally {
    await client.end()
  }
}

function machine(): { line: string; nproc: number; node: string; cpu: string; memoryGiB: number; date: string } {
  const nproc = cpus().length
  const cpu = cpus()[0]?.model ?? 'unknown CPU'
  const memoryGiB = Math.round(totalmem() / 2 ** 30)
  const date = new Date().toISOString().slice(0, 10)
  return {
    line: `${date}, ${nproc} cores (${cpu}), ${memoryGiB} GiB, Node.js ${process.version}`,
    nproc,
    node: process.version,
    cpu,
    memoryGiB,
    date,
  }
}

function log(line: string): void {
  process.stderr.write(`bench:control ${line}\n`)
}

await main()
