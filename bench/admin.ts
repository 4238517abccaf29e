// npm run bench:admin -- [--duration 10s] [--warmup 2s] [--connections 100] [--json]
//
// Admin-plane HTTP throughput of the relay, on loopback, driven by autocannon from this process
// (the relay runs in its own): session creation without auth and with a real RS256 JWT (from a
// local issuer, verified by the relay as a provider's would be), reading a session with the JWT,
// and /healthz as the floor of what one HTTP request costs. Each case gets a fresh relay and a
// discarded warm-up run first. Then the relay's RSS before and after creating 100,000 sessions
// (they live for the default 1h session TTL, so all of them are still held when it is read).
// Any non-2xx response or connection error fails the run: its numbers would measure the errors.
import autocannon from 'autocannon'
import type { Result } from 'autocannon'
import { parseDuration } from '@session-relay/common/config/duration'
import { startIssuer } from './issuer.js'
import type { Issuer } from './issuer.js'
import type { Machine } from './proc.js'
import { cpuTicks, machineInfo, rssBytes, TICKS_PER_SECOND } from './proc.js'
import type { RunningServer } from './servers.js'
import { startServer } from './servers.js'
import { readFlags } from './flags.js'

type Options = { durationMs: number; warmupMs: number; connections: number; json: boolean }

const AUDIENCE = 'relay-bench'
const SESSIONS = 100_000
/** Time for the relay to finish what the last responses left behind before its RSS is read. */
const SETTLE_MS = 1_000

type Case = {
  name: string
  auth: boolean
  method: 'GET' | 'POST'
  /** The path to load; may prepare the relay first (e.g. create the session to read). */
  path(base: string, headers: Record<string, string>): Promise<string>
}

const CASES: Case[] = [
  {
    name: 'POST /admin/sessions, no auth',
    auth: false,
    method: 'POST',
    path: () => Promise.resolve('/admin/sessions'),
  },
  { name: 'POST /admin/sessions, JWT', auth: true, method: 'POST', path: () => Promise.resolve('/admin/sessions') },
  {
    name: 'GET /admin/sessions/{id}, JWT',
    auth: true,
    method: 'GET',
    path: async (base, headers) => {
      const response = await fetch(`${base}/admin/sessions`, { method: 'POST', headers })
      if (response.status !== 201) throw new Error(`creating the session to read answered ${response.status}`)
      return `/admin/sessions/${((await response.json()) as { id: string }).id}`
    },
  },
  { name: 'GET /healthz', auth: false, method: 'GET', path: () => Promise.resolve('/healthz') },
]

export type CaseResult = {
  name: string
  requestsPerSec: number // mean over the run's seconds
  p50Ms: number // autocannon records latency in whole milliseconds
  p99Ms: number
  requests: number
  non2xx: number
  errors: number // connection errors, timeouts included
  timeouts: number
  relayCpuPercent: number
  generatorCpuPercent: number
}

export type MemoryResult = {
  sessions: number
  rssBeforeBytes: number
  rssAfterBytes: number
  bytesPerSession: number
  seconds: number
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2))
  const issuer = await startIssuer()
  const results: CaseResult[] = []
  let memory: MemoryResult
  try {
    for (const c of CASES) {
      results.push(await runCase(options, issuer, c))
      if (!options.json) process.stderr.write('.')
    }
    memory = await measureMemory(options)
  } finally {
    await issuer.close()
  }
  if (!options.json) process.stderr.write('\n')
  const machine = machineInfo()
  if (options.json)
    process.stdout.write(
      JSON.stringify({ date: new Date().toISOString(), machine, options, results, memory }, null, 2) + '\n',
    )
  else process.stdout.write(table(results, memory, machine))
}

async function runCase(options: Options, issuer: Issuer, c: Case): Promise<CaseResult> {
  // The relay is started with --no-auth; a later `--no-auth=false` overrides it (last flag wins).
  const relay = await startServer(
    'relay',
    c.auth ? ['--no-auth=false', '--oidc-issuer', issuer.url, '--oidc-audience', AUDIENCE] : [],
  )
  try {
    const base = `http://127.0.0.1:${relay.port}`
    const headers: Record<string, string> = c.auth
      ? { authorization: `Bearer ${await issuer.mint(AUDIENCE, 'relay:session:create relay:session:read')}` }
      : {}
    // Without this, a relay that ignored the flags above would pass for a fast authenticating one.
    if (c.auth && (await fetch(`${base}/admin/sessions`)).status !== 401)
      throw new Error('relay does not require a token')
    const url = base + (await c.path(base, headers))
    const load = { url, method: c.method, headers, connections: options.connections }
    await run(c.name, { ...load, duration: options.warmupMs / 1000 })
    const { result, relayCpuPercent, generatorCpuPercent } = await measured(relay, () =>
      run(c.name, { ...load, duration: options.durationMs / 1000 }),
    )
    return {
      name: c.name,
      requestsPerSec: result.requests.mean,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      requests: result.requests.total,
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      relayCpuPercent,
      generatorCpuPercent,
    }
  } finally {
    await stop(relay)
  }
}

async function measureMemory(options: Options): Promise<MemoryResult> {
  const relay = await startServer('relay')
  try {
    const base = `http://127.0.0.1:${relay.port}`
    await sleep(SETTLE_MS)
    const rssBeforeBytes = rssBytes(relay.pid)
    const started = performance.now()
    await run(`${SESSIONS} sessions`, {
      url: `${base}/admin/sessions`,
      method: 'POST',
      connections: options.connections,
      amount: SESSIONS,
    })
    const seconds = (performance.now() - started) / 1000
    await sleep(SETTLE_MS)
    const rssAfterBytes = rssBytes(relay.pid)
    // autocannon counts responses; the relay's own counter says how many sessions it holds.
    const created = /^relay_sessions_created_total (\d+)$/m.exec(await (await fetch(`${base}/metrics`)).text())?.[1]
    if (Number(created) !== SESSIONS) throw new Error(`relay created ${created} sessions, expected ${SESSIONS}`)
    return {
      sessions: SESSIONS,
      rssBeforeBytes,
      rssAfterBytes,
      bytesPerSession: (rssAfterBytes - rssBeforeBytes) / SESSIONS,
      seconds,
    }
  } finally {
    await stop(relay)
  }
}

/** One autocannon run; any non-2xx response or connection error throws. */
async function run(name: string, options: autocannon.Options): Promise<Result> {
  const result = await autocannon({ pipelining: 1, ...options })
  if (result.non2xx > 0 || result.errors > 0) {
    const codes = Object.entries(result.statusCodeStats ?? {})
      .map(([code, { count }]) => `${count} x ${code}`)
      .join(', ')
    throw new Error(
      `${name}: ${result.non2xx} non-2xx responses (${codes}), ${result.errors} connection errors (${result.timeouts} timeouts)`,
    )
  }
  return result
}

/** CPU of the relay and of this process (the load generator) while `work` runs, as % of one core. */
async function measured<T>(relay: RunningServer, work: () => Promise<T>) {
  const ticks = cpuTicks(relay.pid)
  const usage = process.cpuUsage()
  const started = performance.now()
  const result = await work()
  const seconds = (performance.now() - started) / 1000
  const own = process.cpuUsage(usage)
  return {
    result,
    relayCpuPercent: ((cpuTicks(relay.pid) - ticks) / TICKS_PER_SECOND / seconds) * 100,
    generatorCpuPercent: ((own.user + own.system) / 1e6 / seconds) * 100,
  }
}

async function stop(server: RunningServer): Promise<void> {
  if (server.process.exitCode !== null) return
  // Wait for the exit, so the next case never shares the CPU with a relay shutting down.
  const exited = new Promise((resolve) => server.process.once('exit', resolve))
  server.process.kill('SIGTERM')
  await exited
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function table(results: CaseResult[], memory: MemoryResult, machine: Machine): string {
  const rows: string[][] = [
    ['case', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors', 'timeouts', 'relay CPU', 'gen. CPU'],
  ]
  for (const r of results) {
    rows.push([
      r.name,
      Math.round(r.requestsPerSec).toLocaleString('en-US'),
      String(r.p50Ms),
      String(r.p99Ms),
      String(r.non2xx),
      String(r.errors),
      String(r.timeouts),
      `${Math.round(r.relayCpuPercent)}%`,
      `${Math.round(r.generatorCpuPercent)}%`,
    ])
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)))
  const lines = rows.map((row) =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '),
  )
  const mib = (n: number): string => `${(n / 2 ** 20).toFixed(1)} MiB`
  const rss =
    `relay RSS, ${memory.sessions.toLocaleString('en-US')} sessions: ${mib(memory.rssBeforeBytes)} -> ${mib(memory.rssAfterBytes)}, ` +
    `${Math.round(memory.bytesPerSession)} bytes/session (created in ${memory.seconds.toFixed(1)} s)`
  return `${machine.cpus} x ${machine.cpuModel}, ${machine.memoryGiB} GiB, Node ${machine.node}\n${lines.join('\n')}\n${rss}\n`
}

function parseOptions(argv: string[]): Options {
  const options: Options = { durationMs: 10_000, warmupMs: 2_000, connections: 100, json: false }
  options.json = readFlags(argv, {
    '--duration': (value) => {
      options.durationMs = parseDuration(value)
    },
    '--warmup': (value) => {
      options.warmupMs = parseDuration(value)
    },
    '--connections': (value) => {
      options.connections = Number(value)
    },
  }).json
  if (!Number.isSafeInteger(options.connections) || options.connections < 1)
    throw new Error('--connections must be a positive integer')
  // autocannon samples once a second and rounds a run up to the next whole second.
  for (const ms of [options.durationMs, options.warmupMs]) {
    if (ms < 1000 || ms % 1000 !== 0) throw new Error('--duration and --warmup must be whole seconds')
  }
  return options
}

main().catch((error: unknown) => {
  process.stderr.write(`\nbench:admin: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
