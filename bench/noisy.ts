// npm run bench:noisy -- [--duration 10s] [--flood-hold 25s] [--flood 1100] [--clients 4]
//                        [--memory-hogs 8] [--hog-mb 500] [--cpu-hogs 32] [--worker PATH] [--threads N]
//                        [--memory-budget BYTES] [--json]
//
// Issue 40's noisy neighbours on the shared worker, driven over its stdin protocol as the local
// runtime drives it (each application loaded with the control plane's default limits: 100
// running, 100 queued, 512 MiB where an application asks for the platform's largest memory).
// A well-behaved application (the probe function's quick JSON answer, `--clients` loops of
// sequential requests) is timed alone, then beside each of:
//   flood:  `--flood` requests at once to another application, each holding its instance for
//           `--flood-hold` (a body promised and not sent: the instance waits, as a handler
//           awaiting a timer does);
//   memory: `--memory-hogs` loops of requests that each allocate `--hog-mb` MiB in an
//           application whose instances may grow to 512 MiB;
//   cpu:    `--cpu-hogs` loops of requests that each spin in a busy loop until their deadline
//           (`--duration`).
// Reported as the neighbour's p50 and p99, their ratios to alone in the same run, and its failed
// requests. Goal (issue 40): no failed request and p99 within 2x of alone.
import { join } from 'node:path'
import { existsSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { formatDuration, parseDuration } from '@session-relay/common/config/duration'
import { readFlags } from './flags.js'
import { machineInfo } from './proc.js'
import type { Timed } from './noisy-load.js'
import { flood, hammer, timed } from './noisy-load.js'
import { CACHE, DEFAULT_WORKER, memoryOf, startWorker } from './worker-process.js'

const options = {
  durationMs: 10_000,
  floodHoldMs: 25_000,
  flood: 1100,
  clients: 4,
  memoryHogs: 8,
  hogMb: 500,
  cpuHogs: 32,
  worker: '',
  threads: '',
  memoryBudget: '',
}
const count = (flag: string, min: number) => (value: string) => {
  const n = Number(value)
  if (!Number.isInteger(n) || n < min) throw new Error(`${flag} must be an integer from ${min}`)
  return n
}
const { json } = readFlags(process.argv.slice(2), {
  '--duration': (v) => (options.durationMs = parseDuration(v)),
  '--flood-hold': (v) => (options.floodHoldMs = parseDuration(v)),
  '--flood': (v) => (options.flood = count('--flood', 1)(v)),
  '--clients': (v) => (options.clients = count('--clients', 1)(v)),
  '--memory-hogs': (v) => (options.memoryHogs = count('--memory-hogs', 1)(v)),
  '--hog-mb': (v) => (options.hogMb = count('--hog-mb', 1)(v)),
  '--cpu-hogs': (v) => (options.cpuHogs = count('--cpu-hogs', 1)(v)),
  '--worker': (v) => (options.worker = v),
  '--threads': (v) => (options.threads = v),
  // The worker's --memory-budget-bytes; unset, its own default (half the machine's memory).
  '--memory-budget': (v) => (options.memoryBudget = String(count('--memory-budget', 16 << 20)(v))),
})

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const PROBE = join(ROOT, 'worker/tests/fixtures')
/** The local runtime's limits for every application (--local-max-concurrent-requests, --local-max-queued-requests). */
const SHARE = { maxConcurrentRequests: 100, maxQueuedRequests: 100 }
const MAX_MEMORY = 512 * 1024 * 1024

const lock = {
  spin_lock_version: 1,
  triggers: [{ id: 't', trigger_type: 'http', trigger_config: { component: 'probe', route: '/...' } }],
  components: [{ id: 'probe', source: { content_type: 'application/wasm' } }],
}

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN
}
const after = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

type Phase = { name: string; neighbour: Timed; noise: Record<string, number>; peakRssMb: number }

/** The worker's largest resident memory while `work` runs, sampled every 100 ms. */
async function peakRss<T>(pid: number, work: Promise<T>): Promise<[T, number]> {
  let peak = memoryOf(pid).rssMb
  const sampler = setInterval(() => (peak = Math.max(peak, memoryOf(pid).rssMb)), 100)
  try {
    return [await work, peak]
  } finally {
    clearInterval(sampler)
  }
}

async function main(): Promise<void> {
  const wasm = join(PROBE, 'probe/component.wasm')
  // The worker tests' function, built as the js builder builds it (a minute) when missing.
  if (!existsSync(wasm)) execFileSync(process.execPath, [join(PROBE, 'build-probe.mjs')], { stdio: 'inherit' })
  const binary = options.worker || DEFAULT_WORKER
  const worker = startWorker(binary, join(CACHE, 'noisy-compiled'), [
    ...(options.threads ? ['--threads', options.threads] : []),
    ...(options.memoryBudget ? ['--memory-budget-bytes', options.memoryBudget] : []),
  ])
  try {
    const load = async (app: string, limits: Record<string, number>): Promise<string> => {
      const reply = await worker.send({
        op: 'load',
        app,
        lock,
        components: { probe: wasm },
        limits: { ...SHARE, ...limits },
      })
      if (!reply.ok || reply.url === undefined) throw new Error(`load ${app}: ${reply.error}`)
      return reply.url
    }
    const neighbour = await load('neighbour', {})
    const flooded = new URL(await load('flood', {}))
    const memory = await load('memory', { memoryBytes: MAX_MEMORY })
    const cpu = await load('cpu', { requestTimeoutMs: options.durationMs })
    // Each application's first instance made before anything is timed.
    await timed(neighbour, 1, 1000)

    const phases: Phase[] = []
    const [alone, aloneRss] = await peakRss(worker.pid, timed(neighbour, options.clients, options.durationMs))
    phases.push({ name: 'alone', neighbour: alone, noise: {}, peakRssMb: aloneRss })

    const held = flood(flooded, options.flood)
    await held.sent
    const [duringFlood, floodRss] = await peakRss(worker.pid, timed(neighbour, options.clients, options.floodHoldMs))
    phases.push({
      name: `flood: ${options.flood} held requests`,
      neighbour: duringFlood,
      noise: await held.finish(),
      peakRssMb: floodRss,
    })

    for (const [name, url, hogs] of [
      [
        `memory: ${options.memoryHogs} x ${options.hogMb} MiB`,
        `${memory}/alloc?mb=${options.hogMb}`,
        options.memoryHogs,
      ],
      [`cpu: ${options.cpuHogs} busy loops`, `${cpu}/loop`, options.cpuHogs],
    ] as const) {
      const stop = after(options.durationMs)
      const [[beside, noise], rss] = await peakRss(
        worker.pid,
        Promise.all([timed(neighbour, options.clients, options.durationMs), hammer(url, hogs, stop)]),
      )
      phases.push({ name, neighbour: beside, noise, peakRssMb: rss })
    }
    const stats = await worker.send({ op: 'stats' })
    report(phases, stats)
  } finally {
    await worker.stop()
  }
}

function report(phases: Phase[], stats: unknown): void {
  const alone = phases[0]!.neighbour.latenciesMs
  const rows = phases.map(({ name, neighbour, noise, peakRssMb }) => {
    const p50 = percentile(neighbour.latenciesMs, 50)
    const p99 = percentile(neighbour.latenciesMs, 99)
    return {
      name,
      requests: neighbour.latenciesMs.length,
      p50Ms: p50,
      p99Ms: p99,
      p50Ratio: p50 / percentile(alone, 50),
      p99Ratio: p99 / percentile(alone, 99),
      failed: neighbour.failed,
      reasons: neighbour.reasons,
      noise,
      peakRssMb,
    }
  })
  if (json) {
    process.stdout.write(JSON.stringify({ machine: machineInfo(), options, phases: rows, stats }, null, 2) + '\n')
    return
  }
  const machine = machineInfo()
  process.stdout.write(
    `\n${machine.cpus} x ${machine.cpuModel}, ${machine.memoryGiB} GiB, Node ${machine.node}; ${options.clients} neighbour clients, ${formatDuration(options.durationMs)} per phase, flood held ${formatDuration(options.floodHoldMs)}\n\n`,
  )
  process.stdout.write(
    '| beside | neighbour requests | p50 | p99 | p50 / alone | p99 / alone | neighbour failed | noise answered | worker peak RSS |\n|---|---:|---:|---:|---:|---:|---:|---|---:|\n',
  )
  for (const row of rows) {
    const failed = row.failed === 0 ? '0' : `${row.failed} (${JSON.stringify(row.reasons)})`
    const noise = Object.entries(row.noise)
      .map(([status, n]) => `${n} x ${status}`)
      .join(', ')
    process.stdout.write(
      `| ${row.name} | ${row.requests} | ${row.p50Ms.toFixed(1)} ms | ${row.p99Ms.toFixed(1)} ms | ${row.p50Ratio.toFixed(2)}x | ${row.p99Ratio.toFixed(2)}x | ${failed} | ${noise} | ${row.peakRssMb.toFixed(0)} MB |\n`,
    )
  }
}

await main()
