// bench:relay's command line: its flags, their defaults, and the targets they name.
import { parseDuration } from '@session-relay/common/config/duration'
import { parseBytes } from '@session-relay/common/config/settings'
import type { GeneratorCase } from './generator-types.js'
import type { Build, ServerName } from './servers.js'
import { parseBuild, SERVERS } from './servers.js'
import { readFlags } from './flags.js'

export type Options = {
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
export type TargetName = ServerName | `relay@${string}`

export function parseOptions(argv: string[]): Options {
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
