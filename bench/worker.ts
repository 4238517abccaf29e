// npm run bench:worker -- [--duration 10s] [--apps 10] [--rounds 5] [--worker PATH] [--threads N] [--json]
//
// The wasmtime worker (worker/) serving the js template against a plain Node `http` server
// answering a short text, started in the same run on the same cores (issue 28's figures, each
// a ratio to that baseline): p50 of sequential requests at concurrency 1, requests/s at 1 and
// 32, CPU per request, resident memory per application with `--apps` distinct builds loaded
// and answering, what letting them go idle gives back, an idle application's first answer at its
// URL (the worker loads it again from disk, scale to zero as the local runtime does it), and worker
// start to first answer with compiled components cached. Then the template's CPU per request
// against a plain handler built the same way (no variable read, no log line) on the same worker,
// `--rounds` pairs of runs at concurrency 32, the template's then the plain handler's, and the
// ratio is the median of each pair's own ratio: the machine's load drifts between pairs by more
// than the template's cost moves, and a pair sees the same load twice (issue 43). The worker is built (cargo, release)
// and the template components are built and compiled once into .cache/bench-worker; a first
// run takes minutes for that, later ones about a minute plus (4 + 2 x rounds) x duration.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import http from 'node:http'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { formatDuration, parseDuration } from '@session-relay/common/config/duration'
import { readFlags } from './flags.js'
import { TICKS_PER_SECOND, cpuTicks, machineInfo } from './proc.js'
import { freePort, scriptPath } from './servers.js'
import type { Memory } from './worker-process.js'
import {
  CACHE,
  DEFAULT_WORKER,
  answer,
  buildWorker,
  memoryOf,
  plainComponent,
  startWorker,
  templateComponent,
} from './worker-process.js'

const options = { durationMs: 10_000, apps: 10, rounds: 5, worker: '', threads: '' }
const { json } = readFlags(process.argv.slice(2), {
  '--duration': (v) => {
    options.durationMs = parseDuration(v)
  },
  '--apps': (v) => {
    options.apps = Number(v)
  },
  '--rounds': (v) => {
    options.rounds = Number(v)
  },
  '--worker': (v) => {
    options.worker = v
  },
  // The worker's --threads; unset, its own default.
  '--threads': (v) => {
    options.threads = v
  },
})
if (!Number.isInteger(options.apps) || options.apps < 1) throw new Error('--apps must be a positive integer')
if (!Number.isInteger(options.rounds) || options.rounds < 1) throw new Error('--rounds must be a positive integer')

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const elapsedMs = (since: bigint): number => Number(process.hrtime.bigint() - since) / 1e6

/** Milliseconds per request, one after the other on one kept-alive connection (autocannon's percentiles are whole milliseconds). */
async function sequential(url: string, count: number): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const times: number[] = []
  for (let i = 0; i < count; i++) {
    const started = process.hrtime.bigint()
    await new Promise<void>((resolve, reject) => {
      http
        .get(url, { agent }, (res) => {
          res.resume()
          res.on('end', resolve)
        })
        .on('error', reject)
    })
    times.push(elapsedMs(started))
  }
  agent.destroy()
  return times
}

type Load = { requestsPerSec: number; requests: number; p99Ms: number; cpuMsPerRequest: number }

/** autocannon at `connections`, with the CPU the server's process spent meanwhile. */
async function load(url: string, pid: number, connections: number): Promise<Load> {
  const before = cpuTicks(pid)
  const result = await autocannon({ url, connections, duration: options.durationMs / 1000, pipelining: 1 })
  const cpuMs = ((cpuTicks(pid) - before) * 1000) / TICKS_PER_SECOND
  if (result.errors + result.non2xx > 0)
    throw new Error(`${url}: ${result.errors} errors, ${result.non2xx} non-2xx answers`)
  const requests = result.requests.total
  return {
    requestsPerSec: Math.round(requests / (options.durationMs / 1000)),
    requests,
    p99Ms: result.latency.p99,
    cpuMsPerRequest: cpuMs / requests,
  }
}

async function startNode(): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort()
  const child = spawn(process.execPath, [scriptPath('./baselines/http-hello.js'), String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  await new Promise((resolve, reject) => {
    child.stdout.once('data', resolve)
    child.once('exit', reject)
  })
  return { child, url: `http://127.0.0.1:${port}/` }
}

async function main(): Promise<void> {
  const binary = options.worker === '' ? DEFAULT_WORKER : options.worker
  if (options.worker === '') buildWorker()
  const wasms = Array.from({ length: options.apps }, (_, i) => templateComponent(`fn${i}`))
  const plainWasm = plainComponent()
  const cacheDir = join(CACHE, 'compiled')

  // Compiles what the cache lacks, so every figure below finds its component compiled on disk.
  const warming = startWorker(binary, cacheDir)
  for (const [i, wasm] of wasms.entries()) await answer((await warming.load(`app${i}`, wasm)) + '/')
  await answer((await warming.load('plain', plainWasm)) + '/')
  await warming.stop()

  const starts: number[] = []
  for (let i = 0; i < 3; i++) {
    const started = process.hrtime.bigint()
    const worker = startWorker(binary, cacheDir)
    await answer((await worker.load('app0', wasms[0]!)) + '/')
    starts.push(elapsedMs(started))
    await worker.stop()
  }

  const worker = startWorker(binary, cacheDir, options.threads === '' ? [] : ['--threads', options.threads])
  const node = await startNode()
  try {
    await new Promise((resolve) => setTimeout(resolve, 200))
    const idle = memoryOf(worker.pid)
    const urls: string[] = []
    for (const [i, wasm] of wasms.entries()) {
      urls.push((await worker.load(`app${i}`, wasm)) + '/')
      await answer(urls[i]!)
    }
    const loaded = memoryOf(worker.pid)
    const url = urls[0]!

    await sequential(url, 300)
    await sequential(node.url, 300)
    const p50 = { worker: [] as number[], node: [] as number[] }
    for (let round = 0; round < 2; round++) {
      p50.worker.push(median(await sequential(url, 2000)))
      p50.node.push(median(await sequential(node.url, 2000)))
    }
    const runs: Record<string, { worker: Load; node: Load }> = {}
    for (const connections of [1, 32]) {
      runs[`c${connections}`] = {
        worker: await load(url, worker.pid, connections),
        node: await load(node.url, node.child.pid!, connections),
      }
    }
    const afterLoad = memoryOf(worker.pid)

    // The template against the plain handler, interleaved so drifting load hits both alike.
    const plainUrl = (await worker.load('plain', plainWasm)) + '/'
    await answer(plainUrl)
    const vsPlain = { template: [] as Load[], plain: [] as Load[] }
    for (let round = 0; round < options.rounds; round++) {
      vsPlain.template.push(await load(url, worker.pid, 32))
      vsPlain.plain.push(await load(plainUrl, worker.pid, 32))
    }
    const idled = await worker.send({ op: 'idle', app: 'plain' })
    if (!idled.ok) throw new Error(`idle plain: ${idled.error}`)

    for (let i = 0; i < urls.length; i++) {
      const reply = await worker.send({ op: 'idle', app: `app${i}` })
      if (!reply.ok) throw new Error(`idle app${i}: ${reply.error}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
    const unloaded = memoryOf(worker.pid)
    // Scale to zero: an idle application's first request at its URL loads it again, from disk.
    const wakes: number[] = []
    for (const url of urls) {
      const started = process.hrtime.bigint()
      await answer(url)
      wakes.push(elapsedMs(started))
    }

    report({ starts, idle, loaded, afterLoad, unloaded, wakes, p50, runs, vsPlain })
  } finally {
    node.child.kill()
    await worker.stop()
  }
}

type Figures = {
  starts: number[]
  idle: Memory
  loaded: Memory
  afterLoad: Memory
  unloaded: Memory
  wakes: number[]
  p50: { worker: number[]; node: number[] }
  runs: Record<string, { worker: Load; node: Load }>
  vsPlain: { template: Load[]; plain: Load[] }
}

function report(f: Figures): void {
  const apps = options.apps
  const perApp = (m: Memory): Memory => ({
    rssMb: (m.rssMb - f.idle.rssMb) / apps,
    anonMb: (m.anonMb - f.idle.anonMb) / apps,
    fileMb: (m.fileMb - f.idle.fileMb) / apps,
    shmemMb: (m.shmemMb - f.idle.shmemMb) / apps,
  })
  const p50Worker = median(f.p50.worker)
  const p50Node = median(f.p50.node)
  const c1 = f.runs.c1!
  const c32 = f.runs.c32!
  const cpu = (loads: Load[]): number => median(loads.map((l) => l.cpuMsPerRequest))
  const rate = (loads: Load[]): number => median(loads.map((l) => l.requestsPerSec))
  const [templateCpu, plainCpu] = [cpu(f.vsPlain.template), cpu(f.vsPlain.plain)]
  const pairedCpu = median(f.vsPlain.template.map((t, i) => t.cpuMsPerRequest / f.vsPlain.plain[i]!.cpuMsPerRequest))
  const rows: [string, string, string, string, string][] = [
    [
      'p50, 2,000 sequential requests',
      `${p50Worker.toFixed(3)} ms`,
      `${p50Node.toFixed(3)} ms`,
      `${(p50Worker / p50Node).toFixed(1)}x`,
      'within 5x',
    ],
    [
      'requests/s, concurrency 1',
      `${c1.worker.requestsPerSec}`,
      `${c1.node.requestsPerSec}`,
      `${(c1.worker.requestsPerSec / c1.node.requestsPerSec).toFixed(3)}x`,
      '',
    ],
    [
      'requests/s, concurrency 32',
      `${c32.worker.requestsPerSec}`,
      `${c32.node.requestsPerSec}`,
      `${(c32.worker.requestsPerSec / c32.node.requestsPerSec).toFixed(3)}x`,
      'at least 0.3x',
    ],
    ['p99, concurrency 32', `${c32.worker.p99Ms} ms`, `${c32.node.p99Ms} ms`, '', ''],
    [
      'CPU per request, concurrency 1',
      `${c1.worker.cpuMsPerRequest.toFixed(3)} ms`,
      `${c1.node.cpuMsPerRequest.toFixed(3)} ms`,
      `${(c1.worker.cpuMsPerRequest / c1.node.cpuMsPerRequest).toFixed(1)}x`,
      '',
    ],
    [
      'CPU per request, concurrency 32',
      `${c32.worker.cpuMsPerRequest.toFixed(3)} ms`,
      `${c32.node.cpuMsPerRequest.toFixed(3)} ms`,
      `${(c32.worker.cpuMsPerRequest / c32.node.cpuMsPerRequest).toFixed(1)}x`,
      '',
    ],
    [
      `template vs plain handler: CPU per request, c32 (medians; ratio: median of ${options.rounds} pairs)`,
      `${templateCpu.toFixed(3)} ms`,
      `${plainCpu.toFixed(3)} ms (plain)`,
      `${pairedCpu.toFixed(2)}x`,
      'within 1.3x',
    ],
    [
      `template vs plain handler: requests/s, c32 (median of ${options.rounds})`,
      `${rate(f.vsPlain.template)}`,
      `${rate(f.vsPlain.plain)} (plain)`,
      `${(rate(f.vsPlain.template) / rate(f.vsPlain.plain)).toFixed(3)}x`,
      '',
    ],
    ['RSS idle (anonymous)', `${f.idle.rssMb.toFixed(0)} MB (${f.idle.anonMb.toFixed(0)})`, '', '', ''],
    [
      `per application, ${apps} answering`,
      `${perApp(f.loaded).rssMb.toFixed(1)} MB (${perApp(f.loaded).anonMb.toFixed(1)} anon)`,
      '',
      '',
      'at most 30 MB',
    ],
    [
      `per application, after the load runs`,
      `${perApp(f.afterLoad).rssMb.toFixed(1)} MB (${perApp(f.afterLoad).anonMb.toFixed(1)} anon)`,
      '',
      '',
      '',
    ],
    [
      `per application, all ${apps} idle`,
      `${perApp(f.unloaded).rssMb.toFixed(1)} MB (${perApp(f.unloaded).anonMb.toFixed(1)} anon)`,
      '',
      '',
      'at most 5 MB',
    ],
    ['idle app: first answer at its URL, p50', `${median(f.wakes).toFixed(0)} ms`, '', '', 'under 100 ms'],
    ['worker start to first answer, cached', `${median(f.starts).toFixed(0)} ms`, '', '', 'under 1 s'],
  ]
  if (json) {
    process.stdout.write(JSON.stringify({ machine: machineInfo(), options, figures: f }, null, 2) + '\n')
    return
  }
  const machine = machineInfo()
  process.stdout.write(
    `\n${machine.cpus} x ${machine.cpuModel}, ${machine.memoryGiB} GiB, Node ${machine.node}; js template, ${formatDuration(options.durationMs)} per load run\n\n`,
  )
  process.stdout.write('| figure | worker | Node `http` | ratio | goal |\n|---|---:|---:|---:|---|\n')
  for (const row of rows) process.stdout.write(`| ${row.join(' | ')} |\n`)
}

await main()
