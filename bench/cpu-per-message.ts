// npm run bench:cpu -- [--builds this,uws,old=/usr/bin/node:/path/to/old/relay/dist/main.js]
//   [--size 16] [--pairs 1] [--rounds 5] [--duration 3s] [--json]
//
// The relay's CPU time per forwarded message, for one or more builds of it taking turns: the
// A/B of two commits or two runtimes. Throughput moves with whatever else the host runs; the
// CPU the relay spends per message barely does, so this answers "did the code get slower"
// on a busy machine too. Each round starts every build afresh, drives it with the frame
// generator of `bench:relay`, and divides the relay's utime + stime (/proc) by the messages
// its /metrics says it forwarded meanwhile. `this` is this checkout's build on this Node;
// `uws` is the bare uWebSockets.js relay of bench:relay (bench/baselines/uws-relay.ts), the
// floor: the same stack with nothing on top. Both by default.
import { readFlags } from './flags.js'
import { runGenerator } from './generator-process.js'
import { cpuTicks, machineInfo, TICKS_PER_SECOND } from './proc.js'
import type { Build } from './servers.js'
import { parseBuild, startServer } from './servers.js'

/** `build` undefined: this checkout's relay, or with `bare`, the bare uWS relay. */
type Options = {
  builds: Array<{ name: string; build: Build | undefined; bare?: boolean }>
  size: number
  pairs: number
  rounds: number
  durationMs: number
}

type Round = { cpuMsPerThousand: number; messages: number; messagesPerSec: number }

async function forwarded(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  const match = /^relay_messages_forwarded_total (\d+)$/m.exec(text)
  if (match === null) throw new Error('the relay has no relay_messages_forwarded_total')
  return Number(match[1])
}

async function measure(options: Options, { build, bare }: Options['builds'][number]): Promise<Round> {
  const server = await startServer(bare === true ? 'uws' : 'relay', [], build)
  try {
    const messagesBefore = await forwarded(server.port)
    const ticksBefore = cpuTicks(server.pid)
    const result = await runGenerator(
      {
        url: `http://127.0.0.1:${server.port}`,
        pid: server.pid,
        size: options.size,
        pairs: options.pairs,
        warmupMs: 500,
        durationMs: options.durationMs,
        latencyRates: [],
        latencyMs: 0,
        writes: 'batched',
        windowBytes: 1 << 20,
        windowMessages: 1024,
      },
      `${options.size} B x ${options.pairs} pairs`,
    )
    const cpuMs = ((cpuTicks(server.pid) - ticksBefore) * 1000) / TICKS_PER_SECOND
    const messages = (await forwarded(server.port)) - messagesBefore
    return { cpuMsPerThousand: (cpuMs / messages) * 1000, messages, messagesPerSec: result.messagesPerSec }
  } finally {
    server.process.kill('SIGTERM')
  }
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

function parseBuilds(value: string): Options['builds'] {
  return value.split(',').map((entry) => {
    if (entry === 'this') return { name: 'this', build: undefined }
    if (entry === 'uws') return { name: 'uws', build: undefined, bare: true }
    return parseBuild(entry)
  })
}

function parseDuration(value: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(value)
  if (match === null) throw new Error(`expected a duration like 3s or 500ms, got ${value}`)
  return Number(match[1]) * (match[2] === 's' ? 1000 : 1)
}

async function main(): Promise<void> {
  const options: Options = { builds: parseBuilds('this,uws'), size: 16, pairs: 1, rounds: 5, durationMs: 3000 }
  const { json } = readFlags(process.argv.slice(2), {
    '--builds': (value) => {
      options.builds = parseBuilds(value)
    },
    '--size': (value) => {
      options.size = Number(value)
    },
    '--pairs': (value) => {
      options.pairs = Number(value)
    },
    '--rounds': (value) => {
      options.rounds = Number(value)
    },
    '--duration': (value) => {
      options.durationMs = parseDuration(value)
    },
  })
  const rounds = new Map<string, Round[]>(options.builds.map(({ name }) => [name, []]))
  for (let r = 0; r < options.rounds; r++) {
    for (const entry of options.builds) {
      rounds.get(entry.name)!.push(await measure(options, entry))
      if (!json) process.stderr.write('.')
    }
  }
  const first = median(rounds.get(options.builds[0]!.name)!.map((round) => round.cpuMsPerThousand))
  const results = [...rounds].map(([name, done]) => {
    const cpu = median(done.map((round) => round.cpuMsPerThousand))
    return { name, cpuMsPerThousandMessages: cpu, ofFirst: cpu / first, rounds: done }
  })
  if (json) {
    process.stdout.write(
      JSON.stringify({ date: new Date().toISOString(), machine: machineInfo(), options, results }, null, 2) + '\n',
    )
    return
  }
  process.stderr.write('\n')
  process.stdout.write(`${options.size} B x ${options.pairs} pairs, ${options.rounds} rounds\n`)
  for (const result of results) {
    process.stdout.write(
      `${result.name}: ${result.cpuMsPerThousandMessages.toFixed(3)} CPU ms per 1000 messages (${result.ofFirst.toFixed(3)} of ${options.builds[0]!.name})\n`,
    )
  }
}

await main()
