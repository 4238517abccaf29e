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
import type { GeneratorCase, GeneratorResult } from './generator-types.js'
import { runGenerator } from './generator-process.js'
import { machineInfo } from './proc.js'
import type { RunningServer, ServerName } from './servers.js'
import { startServer } from './servers.js'
import type { Options, TargetName } from './relay-options.js'
import { moderateRate, parseOptions } from './relay-options.js'
import type { CaseResult } from './relay-report.js'
import { medians, table } from './relay-report.js'

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

main().catch((error: unknown) => {
  process.stderr.write(`\nbench:relay: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
