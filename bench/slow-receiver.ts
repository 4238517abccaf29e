// npm run bench:slow -- [--bytes 256MiB] [--slow 1] [--max-backlog 16MiB] [--max-total-backlog 1GiB]
//   [--pairs 10] [--size 1KiB] [--duration 10s] [--json]
//
// Slow receivers: in each of `--slow` session slots at a time, a receiver that never reads
// while its peer tries to push `--bytes`. Every such session must end with 4003 on both peers
// (the receiver finds its frame once it reads again, unless the relay dropped it to keep the
// total backlog, which closed receivers' unread bytes count against); the relay's RSS must stay within the
// backlog limits plus a fixed overhead, its backlog gauge within --max-total-backlog; and
// healthy pairs beside them (the frame-throughput generator, sequence-checked) must keep
// their speed: the same generator runs once alone and once with the slow receivers going.
import type { Socket } from 'node:net'
import { parseDuration } from '@session-relay/common/config/duration'
import { parseBytes } from '@session-relay/common/config/settings'
import { clientFrameHeader, createFrameParser, rawWebSocket } from './frames.js'
import { runGenerator } from './generator-process.js'
import type { GeneratorCase, GeneratorResult } from './generator-types.js'
import { machineInfo, rssBytes } from './proc.js'
import type { RunningServer } from './servers.js'
import { startServer } from './servers.js'
import { readFlags } from './flags.js'

type Options = {
  bytes: number
  slow: number
  maxBacklog: number
  maxTotalBacklog: number
  pairs: number
  size: number
  durationMs: number
  json: boolean
}

const CHUNK_BYTES = 64 * 1024
const SETTLE_MS = 2_000

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2))
  const relay = await startServer('relay', [
    '--max-backlog',
    String(o.maxBacklog),
    '--max-total-backlog',
    String(o.maxTotalBacklog),
  ])
  try {
    await sleep(SETTLE_MS)
    const idleRss = rssBytes(relay.pid)
    const alone = await runHealthyPairs(relay, o)

    let running = true
    const codes = { sender: new Map<number, number>(), receiver: new Map<number, number>() }
    let finished = 0
    let pushedTotal = 0
    let peakRss = idleRss
    let peakBacklog = 0
    const rssTimer = setInterval(() => {
      peakRss = Math.max(peakRss, rssBytes(relay.pid))
    }, 50)
    const backlogTimer = setInterval(() => {
      void backlogGauge(relay.port).then(
        (bytes) => {
          peakBacklog = Math.max(peakBacklog, bytes)
        },
        () => {},
      )
    }, 100)
    const slots = Array.from({ length: o.slow }, async () => {
      while (running) {
        const result = await slowSession(relay.port, o.bytes)
        count(codes.sender, result.senderCode)
        count(codes.receiver, result.receiverCode)
        pushedTotal += result.pushed
        finished++
      }
    })
    const beside = await runHealthyPairs(relay, o)
    running = false
    await Promise.all(slots)
    clearInterval(rssTimer)
    clearInterval(backlogTimer)

    // Senders always get 4003. A receiver gets it once it reads again, unless the relay had to
    // drop it without a close frame (-1 here) because closed receivers' unread bytes crowded
    // the total backlog.
    const codesAsDesigned =
      [...codes.sender.keys()].every((code) => code === 4003) &&
      [...codes.receiver.keys()].every((code) => code === 4003 || code === NO_CLOSE_FRAME)
    const result = {
      date: new Date().toISOString(),
      machine: machineInfo(),
      options: o,
      slowSessions: finished,
      pushedPerSlowSessionMiB: finished === 0 ? 0 : pushedTotal / finished / 2 ** 20,
      closeCodes: { sender: Object.fromEntries(codes.sender), receiver: Object.fromEntries(codes.receiver) },
      relayRss: {
        idleMiB: idleRss / 2 ** 20,
        peakMiB: peakRss / 2 ** 20,
        peakOverIdleMiB: (peakRss - idleRss) / 2 ** 20,
      },
      backlogPeakMiB: peakBacklog / 2 ** 20,
      healthy: {
        aloneMsgsPerSec: alone.messagesPerSec,
        besideMsgsPerSec: beside.messagesPerSec,
        ratio: beside.messagesPerSec / alone.messagesPerSec,
      },
      ok: codesAsDesigned && finished > 0 && peakBacklog <= o.maxTotalBacklog,
    }
    if (o.json) process.stdout.write(JSON.stringify(result, null, 2) + '\n')
    else process.stdout.write(report(result))
    if (!result.ok) process.exitCode = 1
  } finally {
    relay.process.kill('SIGTERM')
  }
}

/** One session whose receiver never reads: push until the relay closes the sender, then read the receiver's close. */
/** The receiver's socket closed without a close frame. */
const NO_CLOSE_FRAME = -1

async function slowSession(
  port: number,
  bytes: number,
): Promise<{ pushed: number; senderCode: number; receiverCode: number }> {
  const session = (await (await fetch(`http://127.0.0.1:${port}/admin/sessions`, { method: 'POST' })).json()) as {
    id: string
    initiator_token: string
    responder_token: string
  }
  const path = `/relay/${session.id}`
  let receiverCode = NO_CLOSE_FRAME
  let receiverClosed: () => void = () => {}
  const receiverDone = new Promise<void>((resolve) => {
    receiverClosed = resolve
  })
  const readReceiver = createFrameParser(
    () => {},
    (code) => {
      receiverCode = code
      receiverClosed()
    },
  )
  const receiver = await rawWebSocket('127.0.0.1', port, path, session.responder_token, readReceiver)
  receiver.pause() // never reads: the kernel's buffers fill, then the relay's backlog
  receiver.on('close', () => receiverClosed())
  let senderCode = -1
  const sender: Socket = await rawWebSocket(
    '127.0.0.1',
    port,
    path,
    session.initiator_token,
    createFrameParser(
      () => {},
      (code) => {
        senderCode = code
      },
    ),
  )
  const closed = new Promise<void>((resolve) => sender.on('close', () => resolve()))
  sender.on('error', () => {})
  receiver.on('error', () => {})
  const frame = Buffer.concat([clientFrameHeader(CHUNK_BYTES), Buffer.alloc(CHUNK_BYTES)])
  let pushed = 0
  let open = true
  void closed.then(() => {
    open = false
  })
  while (open && senderCode === -1 && pushed < bytes) {
    pushed += CHUNK_BYTES
    if (!sender.write(frame)) await Promise.race([new Promise((resolve) => sender.once('drain', resolve)), closed])
  }
  await Promise.race([closed, sleep(10_000)])
  sender.destroy()
  receiver.resume()
  await Promise.race([receiverDone, sleep(10_000)])
  receiver.destroy()
  return { pushed, senderCode, receiverCode }
}

function runHealthyPairs(relay: RunningServer, o: Options): Promise<GeneratorResult> {
  const input: GeneratorCase = {
    url: `http://127.0.0.1:${relay.port}`,
    pid: relay.pid,
    size: o.size,
    pairs: o.pairs,
    warmupMs: 1_000,
    durationMs: o.durationMs,
    latencyRates: [],
    latencyMs: 0,
    writes: 'batched',
    windowBytes: 1024 * 1024,
    windowMessages: 1024,
  }
  return runGenerator(input, 'healthy pairs')
}

async function backlogGauge(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  return Number(/^relay_outgoing_backlog_bytes (\d+)$/m.exec(text)?.[1] ?? 0)
}

function report(
  r: Record<string, unknown> & {
    options: Options
    relayRss: Record<string, number>
    healthy: Record<string, number>
    backlogPeakMiB: number
    ok: boolean
  },
): string {
  const o = r.options
  return (
    [
      `slow receivers: ${o.slow} at a time, each sender trying ${mib(o.bytes)}; --max-backlog ${mib(o.maxBacklog)}, --max-total-backlog ${mib(o.maxTotalBacklog)}`,
      `slow sessions ended: ${String(r.slowSessions)}, about ${(r.pushedPerSlowSessionMiB as number).toFixed(1)} MiB pushed into each before its close`,
      `close codes: ${JSON.stringify(r.closeCodes)}`,
      `relay RSS: idle ${r.relayRss.idleMiB!.toFixed(1)} MiB, peak ${r.relayRss.peakMiB!.toFixed(1)} MiB (+${r.relayRss.peakOverIdleMiB!.toFixed(1)} MiB)`,
      `backlog gauge peak: ${r.backlogPeakMiB.toFixed(1)} MiB`,
      `healthy pairs (${o.pairs} x ${o.size} B): ${Math.round(r.healthy.aloneMsgsPerSec!).toLocaleString('en-US')} msgs/s alone, ` +
        `${Math.round(r.healthy.besideMsgsPerSec!).toLocaleString('en-US')} beside the slow receivers (${(r.healthy.ratio! * 100).toFixed(0)}%)`,
      r.ok
        ? 'ok'
        : 'FAILED: a sender without 4003, a receiver with another close code, no slow session ended, or the backlog passed the total limit',
    ].join('\n') + '\n'
  )
}

function parseOptions(argv: string[]): Options {
  const o: Options = {
    bytes: 256 * 2 ** 20,
    slow: 1,
    maxBacklog: 16 * 2 ** 20,
    maxTotalBacklog: 2 ** 30,
    pairs: 10,
    size: 1024,
    durationMs: 10_000,
    json: false,
  }
  o.json = readFlags(argv, {
    '--bytes': (value) => {
      o.bytes = parseBytes(value)
    },
    '--slow': (value) => {
      o.slow = Number(value)
    },
    '--max-backlog': (value) => {
      o.maxBacklog = parseBytes(value)
    },
    '--max-total-backlog': (value) => {
      o.maxTotalBacklog = parseBytes(value)
    },
    '--pairs': (value) => {
      o.pairs = Number(value)
    },
    '--size': (value) => {
      o.size = parseBytes(value)
    },
    '--duration': (value) => {
      o.durationMs = parseDuration(value)
    },
  }).json
  return o
}

function count(map: Map<number, number>, code: number): void {
  map.set(code, (map.get(code) ?? 0) + 1)
}

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MiB`
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

main().catch((error: unknown) => {
  process.stderr.write(`bench:slow: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
