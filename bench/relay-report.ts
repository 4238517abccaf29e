// bench:relay's results: the medians of each case's runs and the tables printed from them.
import type { GeneratorCase, GeneratorResult, LatencyResult } from './generator-types.js'
import type { Machine } from './proc.js'
import type { ServerName } from './servers.js'
import { SERVERS } from './servers.js'
import type { TargetName } from './relay-options.js'

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

export function medians(runs: GeneratorResult[]): CaseResult['median'] {
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

export function table(results: CaseResult[], machine: Machine): string {
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
