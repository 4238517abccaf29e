// npm run bench:relay -- [--sizes 16,1024,65536,1048576] [--pairs 1,100] [--targets relay,uws,ws,tcp]
//   [--relay-builds NAME=NODE:MAIN_JS[,...]] [--writes batched,single] [--warmup 1s] [--duration 3s] [--latency 2s] [--repetitions 3]
//   [--window-bytes 1MiB] [--window-messages 1024] [--latency-rate moderate|half|N[,N...]] [--json]
//
// Frame throughput of the relay against three baselines in the same run (`uws`: the bare
// uWebSockets.js relay, the same stack with nothing on top, the floor the relay is held to), each target in its
// own process and the load generator in another, on loopback. Each case runs `repetitions`
// times per target, the targets taking turns, and reports medians. `--writes single` has the
// clients write one frame per write call, as browsers send. `--relay-builds` adds other builds
// of the relay (another commit or runtime) as targets `relay@NAME`, measured against the same
// generator and baselines on this Node. Latency is measured at fixed
// rates after the throughput phase, one phase per rate: `moderate` (default) is the same for
// every target, 50,000 messages/s or 200 MB/s, whichever is fewer messages; `half` is half the
// peak that same run reached; a number is messages/s.
import { parseDuration } from '@session-relay/common/config/duration'
import { parseBytes } from '@session-relay/common/config/settings'
import type { GeneratorCase, GeneratorResult, LatencyResult } from './generator-types.js'
import { runGenerator } from './generator-process.js'
import type { Machine } from './proc.js'
import { machineInfo } from './proc.js'
import type { Build, RunningServer, ServerName } from './servers.js'
import { parseBuild, SERVERS, startServer } from './servers.js'
import { readFlags } from './flags.js'

type Options = {
  sizes: number[]
  pairs: number[]
  targets: TargetName[]
  writes: Array<GeneratorCase['writes']>
  relayBuilds: Map<string, Build>
  warmupMs: number
  durationMs: number
  latencyMs: number
  repetitions: number
  windowBytes: number
  windowMessages: number
  latencyRates: Array<'moderate' | 'half' | number>
  json: boolean
}

/** The `moderate` latency rate for a frame size: 50,000 messages/s, at most 200 MB/s. */
export function moderateRate(size: number): number {
  return Math.max(1, Math.min(50_000, Math.floor(200e6 / size)))
}

/** `relay`, `uws`, `ws`, `tcp`, or `relay@NAME` for a build given by `--relay-builds`. */
type TargetName = ServerName | `relay@${string}`

export type CaseResult = {
  target: TargetName
  size: number
  pairs: number
  writes: GeneratorCase['writes']
  runs: GeneratorResult[]
  median: {
    messagesPerSec: number
    mbPerSec: number
    serverCpuPercent: number
    serverRssBytes: number
    generatorCpuPercent: number
    /**
     * One entry per latency rate. `pacerP99Ms`: how late the generator's own timer wrote due
     * frames, its noise, left out of the percentiles; `serverCpuPercent` while paced.
     */
    latency: Array<Omit<LatencyResult, 'samples' | 'generatorCpuPercent'>>
  }
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2))
  const results: CaseResult[] = []
  // Every target is up for the whole run and the repetitions take turns (relay, ws, tcp,
  // relay, ...): a host that speeds up or slows down during the minutes of a run then moves
  // every target alike, and the ratios compare runs made side by side.
  const servers = new Map<TargetName, RunningServer>()
  try {
    for (const name of options.targets) {
      const build = name.startsWith('relay@') ? options.relayBuilds.get(name.slice('relay@'.length)) : undefined
      servers.set(name, await startServer(build === undefined ? (name as ServerName) : 'relay', [], build))
    }
    for (const writes of options.writes) {
      for (const size of options.sizes) {
        for (const pairs of options.pairs) {
          const runs = new Map<TargetName, GeneratorResult[]>(options.targets.map((name) => [name, []]))
          for (let r = 0; r < options.repetitions; r++) {
            for (const name of options.targets) {
              runs.get(name)!.push(await runCase(options, servers.get(name)!, size, pairs, writes))
              if (!options.json) process.stderr.write('.')
            }
          }
          for (const [name, done] of runs)
            results.push({ target: name, size, pairs, writes, runs: done, median: medians(done) })
        }
      }
    }
  } finally {
    for (const server of servers.values()) server.process.kill('SIGTERM')
  }
  if (!options.json) process.stderr.write('\n')
  const machine = machineInfo()
  if (options.json)
    process.stdout.write(JSON.stringify({ date: new Date().toISOString(), machine, options, results }, null, 2) + '\n')
  else process.stdout.write(table(results, machine))
}

function runCase(
  options: Options,
  server: RunningServer,
  size: number,
  pairs: number,
  writes: GeneratorCase['writes'],
): Promise<GeneratorResult> {
  const input: GeneratorCase = {
    url: `http://127.0.0.1:${server.port}`,
    pid: server.pid,
    size,
    pairs,
    warmupMs: options.warmupMs,
    durationMs: options.durationMs,
    latencyRates: options.latencyRates.map((rate) =>
      rate === 'moderate' ? moderateRate(size) : rate === 'half' ? 0 : rate,
    ),
    latencyMs: options.latencyMs,
    writes,
    windowBytes: options.windowBytes,
    windowMessages: options.windowMessages,
  }
  // Loss, reordering or a refused connection: stop everything, loudly.
  return runGenerator(input, `${size} B x ${pairs} pairs`)
}

function medians(runs: GeneratorResult[]): CaseResult['median'] {
  const median = (pick: (r: GeneratorResult) => number): number => {
    const values = runs
      .map(pick)
      .filter((v) => !Number.isNaN(v))
      .sort((a, b) => a - b)
    return values.length === 0 ? NaN : values[Math.floor(values.length / 2)]!
  }
  const phases = Math.max(0, ...runs.map((r) => r.latency.length))
  const latency = Array.from({ length: phases }, (_, i) => {
    const at = (pick: (l: LatencyResult) => number) =>
      median((r) => (r.latency[i] === undefined ? NaN : pick(r.latency[i])))
    return {
      rate: at((l) => l.rate),
      p50Ms: at((l) => l.p50Ms),
      p99Ms: at((l) => l.p99Ms),
      p999Ms: at((l) => l.p999Ms),
      pacerP99Ms: at((l) => l.pacerP99Ms),
      serverCpuPercent: at((l) => l.serverCpuPercent),
    }
  })
  return {
    messagesPerSec: median((r) => r.messagesPerSec),
    mbPerSec: median((r) => r.mbPerSec),
    serverCpuPercent: median((r) => r.serverCpuPercent),
    serverRssBytes: median((r) => r.serverRssBytes),
    generatorCpuPercent: median((r) => r.generatorCpuPercent),
    latency,
  }
}

function table(results: CaseResult[], machine: Machine): string {
  const find = (target: TargetName, r: CaseResult) =>
    results.find((o) => o.target === target && o.size === r.size && o.pairs === r.pairs && o.writes === r.writes)
  const caseOf = (r: CaseResult): string =>
    `${bytes(r.size)} x ${r.pairs}${r.writes === 'single' ? ', single writes' : ''}`
  const label = (target: TargetName): string =>
    target.startsWith('relay@')
      ? `${SERVERS.relay.label} ${target.slice('relay'.length)}`
      : SERVERS[target as ServerName].label
  const throughput: string[][] = [
    ['case', 'target', 'msgs/s', 'MB/s', 'server CPU', 'server RSS', 'gen. CPU', 'vs uWS', 'vs ws', 'vs tcp'],
  ]
  const latency: string[][] = [
    ['case', 'target', 'rate/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'pacer p99', 'server CPU', 'p99 vs tcp'],
  ]
  for (const r of results) {
    const m = r.median
    const uws = find('uws', r)
    const ws = find('ws', r)
    const tcp = find('tcp', r)
    throughput.push([
      caseOf(r),
      label(r.target),
      Math.round(m.messagesPerSec).toLocaleString('en-US'),
      m.mbPerSec.toFixed(1),
      `${Math.round(m.serverCpuPercent)}%`,
      `${(m.serverRssBytes / 2 ** 20).toFixed(0)} MiB`,
      `${Math.round(m.generatorCpuPercent)}%`,
      r.target !== 'uws' && uws !== undefined ? `${(m.messagesPerSec / uws.median.messagesPerSec).toFixed(2)}x` : '',
      r.target !== 'ws' && ws !== undefined ? `${(m.messagesPerSec / ws.median.messagesPerSec).toFixed(2)}x` : '',
      r.target !== 'tcp' && tcp !== undefined ? `${Math.round((m.mbPerSec / tcp.median.mbPerSec) * 100)}%` : '',
    ])
    m.latency.forEach((l, i) => {
      const base = tcp?.median.latency[i]
      latency.push([
        caseOf(r),
        label(r.target),
        Math.round(l.rate).toLocaleString('en-US'),
        ms(l.p50Ms),
        ms(l.p99Ms),
        ms(l.p999Ms),
        ms(l.pacerP99Ms),
        Number.isNaN(l.serverCpuPercent) ? '-' : `${Math.round(l.serverCpuPercent)}%`,
        r.target !== 'tcp' && base !== undefined ? `${(l.p99Ms / base.p99Ms).toFixed(2)}x` : '',
      ])
    })
  }
  const render = (rows: string[][]): string => {
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)))
    return rows
      .map((row) => row.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '))
      .join('\n')
  }
  const head = `${machine.cpus} x ${machine.cpuModel}, ${machine.memoryGiB} GiB, Node ${machine.node}`
  return `${head}\n${render(throughput)}\n${latency.length > 1 ? `\n${render(latency)}\n` : ''}`
}

function ms(value: number): string {
  return Number.isNaN(value) ? '-' : value.toFixed(2)
}

function bytes(n: number): string {
  if (n >= 2 ** 20 && n % 2 ** 20 === 0) return `${n / 2 ** 20} MiB`
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`
  return `${n} B`
}

function parseOptions(argv: string[]): Options {
  const options: Options = {
    sizes: [16, 1024, 65536, 1048576],
    pairs: [1, 100],
    targets: ['relay', 'uws', 'ws', 'tcp'],
    writes: ['batched'],
    relayBuilds: new Map(),
    warmupMs: 1000,
    durationMs: 3000,
    latencyMs: 2000,
    repetitions: 3,
    windowBytes: 2 ** 20,
    windowMessages: 1024,
    latencyRates: ['moderate'],
    json: false,
  }
  const list = (text: string): string[] =>
    text
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
  options.json = readFlags(argv, {
    '--sizes': (value) => {
      options.sizes = list(value).map(parseBytes)
    },
    '--pairs': (value) => {
      options.pairs = list(value).map(Number)
    },
    '--targets': (value) => {
      options.targets = list(value).map((t) => {
        if (!(t in SERVERS) && !t.startsWith('relay@')) throw new Error(`unknown target ${t}`)
        return t as TargetName
      })
    },
    '--relay-builds': (value) => {
      for (const entry of list(value)) {
        const { name, build } = parseBuild(entry)
        options.relayBuilds.set(name, build)
      }
    },
    '--writes': (value) => {
      options.writes = list(value).map((w) => {
        if (w !== 'batched' && w !== 'single') throw new Error(`--writes takes batched or single, got ${w}`)
        return w
      })
    },
    '--warmup': (value) => {
      options.warmupMs = parseDuration(value)
    },
    '--duration': (value) => {
      options.durationMs = parseDuration(value)
    },
    '--latency': (value) => {
      options.latencyMs = parseDuration(value)
    },
    '--repetitions': (value) => {
      options.repetitions = Number(value)
    },
    '--window-bytes': (value) => {
      options.windowBytes = parseBytes(value)
    },
    '--window-messages': (value) => {
      options.windowMessages = Number(value)
    },
    '--latency-rate': (value) => {
      options.latencyRates = list(value).map((rate) => {
        if (rate === 'moderate' || rate === 'half') return rate
        const n = Number(rate)
        if (!Number.isInteger(n) || n <= 0)
          throw new Error(`--latency-rate takes moderate, half or messages/s, got ${rate}`)
        return n
      })
    },
  }).json
  // Each other build is a target beside the relay, unless --targets already names it.
  for (const name of options.relayBuilds.keys()) {
    if (!options.targets.includes(`relay@${name}`))
      options.targets.splice(options.targets.indexOf('relay') + 1, 0, `relay@${name}`)
  }
  for (const target of options.targets) {
    if (target.startsWith('relay@') && !options.relayBuilds.has(target.slice('relay@'.length)))
      throw new Error(`${target}: no such build in --relay-builds`)
  }
  return options
}

main().catch((error: unknown) => {
  process.stderr.write(`\nbench:relay: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
