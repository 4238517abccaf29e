// npm run bench:soak -- [--pairs 9980] [--duration 60s] [--warmup 10s] [--rate 2] [--size 64]
//   [--sample 5s] [--json]
//
// Soak: `--pairs` attached pairs exchange small sequence-numbered messages both ways at
// `--rate` messages per second per direction for `--duration`. Every frame is checked for
// order as it arrives, and each side's sends are matched against the other side's receipts
// at the end: any error, loss, reordering or close fails the run. The relay's RSS is sampled
// every `--sample`; after `--warmup` it should stay flat. The relay holds both sockets of each
// pair and the open-file limit here is 20,000 per process, so the default is 9,980 pairs (as
// in bench:idle); the clients are two processes, one per slot.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseDuration } from '@session-relay/common/config/duration'
import { machineInfo, rssBytes } from './proc.js'
import type { SoakInput, SoakReport } from './soak-clients.js'
import { createSessions, scriptPath, startServer } from './servers.js'
import { readFlags } from './flags.js'

type Options = {
  pairs: number
  durationMs: number
  warmupMs: number
  rate: number
  size: number
  sampleMs: number
  json: boolean
}

/** RSS may grow this much between the end of warm-up and the end of the run and still count as flat. */
const FLAT_SLACK_BYTES = 8 * 2 ** 20

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2))
  const relay = await startServer('relay')
  const clients: ChildProcess[] = []
  try {
    const sessions = await createSessions(relay.port, o.pairs)
    const sides = [0, 1].map((slot) =>
      startClients(
        relay.port,
        o,
        sessions.map((s) => ({ id: s.id, token: slot === 0 ? s.initiator_token : s.responder_token })),
      ),
    )
    for (const side of sides) clients.push(side.child)
    await Promise.all(sides.map((side) => side.attached))

    const samples: Array<{ atMs: number; rssMiB: number }> = []
    const started = Date.now()
    const sample = (): void => {
      samples.push({ atMs: Date.now() - started, rssMiB: rssBytes(relay.pid) / 2 ** 20 })
    }
    sample()
    const timer = setInterval(sample, o.sampleMs)
    for (const side of sides) side.child.stdin.write('go\n')
    const [a, b] = (await Promise.all(sides.map((side) => side.report))) as [SoakReport, SoakReport]
    clearInterval(timer)
    sample()

    let lost = 0
    for (let i = 0; i < o.pairs; i++) {
      lost += Math.abs(a.sent[i]! - b.received[i]!) + Math.abs(b.sent[i]! - a.received[i]!)
    }
    const sum = (values: number[]): number => values.reduce((x, y) => x + y, 0)
    const afterWarmup = samples.find((s) => s.atMs >= o.warmupMs) ?? samples[samples.length - 1]!
    const last = samples[samples.length - 1]!
    const growthMiB = last.rssMiB - afterWarmup.rssMiB
    const result = {
      date: new Date().toISOString(),
      machine: machineInfo(),
      options: o,
      messagesSent: sum(a.sent) + sum(b.sent),
      messagesReceived: sum(a.received) + sum(b.received),
      lostOrExtra: lost,
      outOfOrder: a.outOfOrder + b.outOfOrder,
      closedByRelay: a.closedByRelay + b.closedByRelay,
      errors: [...a.errors, ...b.errors],
      rss: {
        afterWarmupMiB: afterWarmup.rssMiB,
        endMiB: last.rssMiB,
        growthMiB,
        maxMiB: Math.max(...samples.map((s) => s.rssMiB)),
        samples,
      },
      flat: growthMiB * 2 ** 20 <= FLAT_SLACK_BYTES,
      ok: false,
    }
    result.ok =
      result.lostOrExtra === 0 &&
      result.outOfOrder === 0 &&
      result.closedByRelay === 0 &&
      result.errors.length === 0 &&
      result.flat
    if (o.json) process.stdout.write(JSON.stringify(result, null, 2) + '\n')
    else {
      process.stdout.write(
        [
          `soak: ${o.pairs} pairs, ${o.rate} msgs/s each way per pair, ${o.size} B frames, ${o.durationMs / 1000} s (warm-up ${o.warmupMs / 1000} s)`,
          `messages: ${result.messagesSent.toLocaleString('en-US')} sent, ${result.messagesReceived.toLocaleString('en-US')} received; lost or extra ${lost}, out of order ${result.outOfOrder}, closed by the relay ${result.closedByRelay}, errors ${result.errors.length}`,
          ...result.errors.slice(0, 5).map((e) => `  ${e}`),
          `relay RSS: ${afterWarmup.rssMiB.toFixed(1)} MiB after warm-up, ${last.rssMiB.toFixed(1)} MiB at the end (${growthMiB >= 0 ? '+' : ''}${growthMiB.toFixed(1)} MiB), max ${result.rss.maxMiB.toFixed(1)} MiB`,
          `RSS every ${o.sampleMs / 1000} s: ${samples.map((s) => s.rssMiB.toFixed(0)).join(' ')}`,
          result.ok
            ? 'ok'
            : `FAILED${result.flat ? '' : `: RSS grew more than ${FLAT_SLACK_BYTES / 2 ** 20} MiB after warm-up`}`,
        ].join('\n') + '\n',
      )
    }
    if (!result.ok) process.exitCode = 1
  } finally {
    for (const child of clients) child.kill('SIGKILL')
    relay.process.kill('SIGTERM')
  }
}

function startClients(port: number, o: Options, attaches: SoakInput['attaches']) {
  const file = join(tmpdir(), `soak-${process.pid}-${Math.random().toString(36).slice(2)}.json`)
  const input: SoakInput = {
    host: '127.0.0.1',
    port,
    attaches,
    rate: o.rate,
    size: o.size,
    durationMs: o.durationMs,
    drainMs: 2_000,
  }
  writeFileSync(file, JSON.stringify(input))
  const child = spawn(process.execPath, [scriptPath('./soak-clients.js'), file], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines: string[] = []
  let buffered = ''
  const waiters: Array<(line: string) => void> = []
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk
    let end
    while ((end = buffered.indexOf('\n')) !== -1) {
      const line = buffered.slice(0, end)
      buffered = buffered.slice(end + 1)
      const waiter = waiters.shift()
      if (waiter !== undefined) waiter(line)
      else lines.push(line)
    }
  })
  const exited = new Promise<never>((_resolve, reject) =>
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`soak clients exited with ${code}`))
    }),
  )
  const nextLine = (): Promise<string> =>
    Promise.race([
      new Promise<string>((resolve) => {
        const line = lines.shift()
        if (line !== undefined) resolve(line)
        else waiters.push(resolve)
      }),
      exited,
    ])
  const attached = nextLine()
  const report = attached.then(async () => JSON.parse(await nextLine()) as SoakReport)
  return { child, attached, report }
}

function parseOptions(argv: string[]): Options {
  const o: Options = {
    pairs: 9980,
    durationMs: 60_000,
    warmupMs: 10_000,
    rate: 2,
    size: 64,
    sampleMs: 5_000,
    json: false,
  }
  o.json = readFlags(argv, {
    '--pairs': (value) => {
      o.pairs = Number(value)
    },
    '--duration': (value) => {
      o.durationMs = parseDuration(value)
    },
    '--warmup': (value) => {
      o.warmupMs = parseDuration(value)
    },
    '--rate': (value) => {
      o.rate = Number(value)
    },
    '--size': (value) => {
      o.size = Number(value)
    },
    '--sample': (value) => {
      o.sampleMs = parseDuration(value)
    },
  }).json
  if (o.size < 16) throw new Error('--size must be at least 16 bytes (the sequence prefix)')
  return o
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:soak: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
