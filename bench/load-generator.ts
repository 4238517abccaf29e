// One benchmark case in its own process: N session pairs, the initiator of each sends binary
// frames of one size as fast as its responder receives them (within a window), then at a
// fixed rate for latency. Every frame carries a sequence number and every receiver checks
// order and count: a single lost or reordered frame fails the run.
//
// Input: one JSON argument (GeneratorCase). Output: one JSON line (GeneratorResult).
import type { Socket } from 'node:net'
import { clientFrameHeader, closeFrame, createFrameParser, PREFIX_BYTES, rawWebSocket } from './frames.js'
import { cpuTicks, rssBytes, TICKS_PER_SECOND } from './proc.js'

export type GeneratorCase = {
  /** http://host:port of the server under test. */
  url: string
  /** The server's pid, for its CPU time and RSS. */
  pid: number
  size: number
  pairs: number
  warmupMs: number
  durationMs: number
  /**
   * One latency phase per rate, in this order, each `latencyMs` long: messages per second
   * across all pairs; 0 is half the peak just measured. Empty or `latencyMs` 0: none.
   */
  latencyRates: number[]
  latencyMs: number
  /**
   * `batched`: small frames go out many per write, as a client that buffers does. `single`:
   * one frame per write call, as a browser's `send()` does; Node still gathers writes the
   * kernel could not take at once into one writev, as a browser's network stack would.
   */
  writes: 'batched' | 'single'
  windowBytes: number
  windowMessages: number
  /** Bearer token for POST /admin/sessions, when the server wants one. */
  adminToken?: string
}

export type GeneratorResult = {
  messagesPerSec: number
  mbPerSec: number
  serverCpuPercent: number
  serverRssBytes: number
  generatorCpuPercent: number
  /**
   * One-way latency at a fixed rate. `pacerP99Ms`: how late the generator itself wrote frames
   * that were due (its timer, its share of two cores), which the one-way figures leave out.
   * CPU figures are the latency phase's, where paced small writes cost more per message than
   * saturation does.
   */
  latency: LatencyResult[]
  /** Frames per write call in the throughput phase: 1 in `single` mode. */
  framesPerWrite: number
  messagesChecked: number
}

export type LatencyResult = {
  rate: number
  samples: number
  p50Ms: number
  p99Ms: number
  p999Ms: number
  pacerP99Ms: number
  serverCpuPercent: number
  generatorCpuPercent: number
}

type Pair = {
  index: number
  sender: Socket
  receiver: Socket
  sent: number
  received: number
  /** Frames that may be in flight at once: bounded in messages and in bytes. */
  window: number
}

/** Up to this many small frames, and this many bytes, go out in one write. */
const MAX_BATCH_FRAMES = 512
const MAX_BATCH_BYTES = 256 * 1024
/** Frames from this size on are written as a header plus a shared, never-modified body. */
const SHARED_BODY_FROM = 4096

async function main(): Promise<void> {
  const c = JSON.parse(process.argv[2] ?? '{}') as GeneratorCase
  if (c.size < PREFIX_BYTES) throw new Error(`frames must be at least ${PREFIX_BYTES} bytes`)
  const target = new URL(c.url)
  const host = target.hostname
  const port = Number(target.port)

  const header = clientFrameHeader(c.size)
  const frameBytes = header.length + c.size
  const sharedBody = Buffer.alloc(c.size - PREFIX_BYTES)
  // Batches of small frames with their headers in place; a write stamps the prefixes of the
  // frames it needs. A batch goes back to the pool as soon as the kernel has taken it: at
  // once when the write completes at once, else when the socket flushes it. A new buffer per
  // write made V8 run full collections for their external memory, pauses of about 8 ms in the
  // middle of a latency phase.
  const batchFrames = Math.max(1, Math.min(MAX_BATCH_FRAMES, Math.floor(MAX_BATCH_BYTES / frameBytes)))
  const template = Buffer.alloc(frameBytes * batchFrames)
  for (let i = 0; i < batchFrames; i++) header.copy(template, i * frameBytes)
  const freeBatches: Buffer[] = []

  let failure = null as Error | null // set in callbacks, so not narrowed to null
  let receivedTotal = 0
  const highestRate = Math.max(0, ...c.latencyRates)
  const latencies = createSamples(
    Math.ceil((highestRate > 0 && !c.latencyRates.includes(0) ? highestRate : 2_000_000) * (c.latencyMs / 1000) * 1.2) +
      1024,
  )
  let writeCalls = 0
  let framesWritten = 0

  let saturating = true
  let finished = false
  let pacer: ReturnType<typeof createPacer> | null = null
  const pairs: Pair[] = []
  for (let index = 0; index < c.pairs; index++) {
    const session = await createSession(c.url, c.adminToken)
    const path = `/relay/${session.id}`
    const window = Math.max(2, Math.min(c.windowMessages, Math.floor(c.windowBytes / c.size)))
    const pair: Pair = {
      index,
      sender: null as unknown as Socket,
      receiver: null as unknown as Socket,
      sent: 0,
      received: 0,
      window,
    }
    const parse = createFrameParser(
      (seq, sentAt) => {
        if (seq !== pair.received) {
          failure ??= new Error(`pair ${index}: expected frame ${pair.received}, got ${seq}: lost or reordered`)
        }
        pair.received++
        receivedTotal++
        if (sentAt !== 0) latencies.add(performance.now() - sentAt)
      },
      (code) => {
        failure ??= new Error(`pair ${index}: the server closed the receiver with ${code}`)
      },
    )
    pair.receiver = await rawWebSocket(host, port, path, session.responder_token, (chunk) => {
      parse(chunk)
      // Top the sender's window up after every read, so writes batch.
      if (saturating) send(pair, pair.window - (pair.sent - pair.received))
      else pacer?.refill(pair)
    })
    pair.sender = await rawWebSocket(
      host,
      port,
      path,
      session.initiator_token,
      createFrameParser(
        () => {},
        (code) => {
          failure ??= new Error(`pair ${index}: the server closed the sender with ${code}`)
        },
      ),
    )
    pairs.push(pair)
    for (const socket of [pair.sender, pair.receiver]) {
      socket.on('error', (error) => {
        failure ??= error
      })
      socket.on('close', () => {
        if (!finished) failure ??= new Error(`pair ${index}: connection closed`)
      })
    }
  }

  /**
   * Write `count` frames to the pair's sender. Frame k is stamped `stamp + k * spacing`, the
   * time latency counts from (a stamp of 0: no latency sample).
   */
  function send(pair: Pair, count: number, stamp = 0, spacing = 0): void {
    if (count <= 0 || failure !== null) return
    if (c.size >= SHARED_BODY_FROM) {
      pair.sender.cork()
      for (let k = 0; k < count; k++) {
        const head = Buffer.allocUnsafe(header.length + PREFIX_BYTES)
        header.copy(head)
        head.writeUInt32LE(pair.sent++, header.length)
        head.writeUInt32LE(0, header.length + 4)
        head.writeDoubleLE(stamp === 0 ? 0 : stamp + k * spacing, header.length + 8)
        pair.sender.write(head)
        pair.sender.write(sharedBody)
      }
      pair.sender.uncork()
      writeCalls += count
      framesWritten += count
      return
    }
    while (count > 0) {
      const frames = Math.min(count, batchFrames)
      const batch = freeBatches.pop() ?? Buffer.from(template)
      for (let k = 0, at = header.length; k < frames; k++, at += frameBytes) {
        batch.writeUInt32LE(pair.sent++, at)
        batch.writeDoubleLE(stamp, at + 8)
        if (stamp !== 0) stamp += spacing
      }
      let taken = false
      const release = (): void => {
        if (!taken) freeBatches.push(batch)
      }
      if (c.writes === 'single') {
        // Writes complete in order: the batch is free once its last frame's write is.
        for (let k = 0; k < frames; k++)
          pair.sender.write(
            batch.subarray(k * frameBytes, (k + 1) * frameBytes),
            k === frames - 1 ? release : undefined,
          )
        writeCalls += frames
      } else {
        pair.sender.write(batch.subarray(0, frames * frameBytes), release)
        writeCalls++
      }
      framesWritten += frames
      taken = pair.sender.writableLength === 0
      if (taken) freeBatches.push(batch)
      count -= frames
    }
  }

  // Saturation: fill every window; reads keep them full.
  collectGarbage()
  for (const pair of pairs) send(pair, pair.window)
  await sleep(c.warmupMs)
  const start = snapshot(c.pid, receivedTotal)
  const writesBefore = { calls: writeCalls, frames: framesWritten }
  await sleep(c.durationMs)
  const end = snapshot(c.pid, receivedTotal)
  const framesPerWrite = (framesWritten - writesBefore.frames) / Math.max(1, writeCalls - writesBefore.calls)
  saturating = false
  await drain(pairs, () => failure)

  const seconds = (end.at - start.at) / 1000
  const messages = end.received - start.received
  const latency: LatencyResult[] = []
  for (const wanted of c.latencyMs > 0 ? c.latencyRates : []) {
    if (failure !== null) break
    const rate = wanted > 0 ? wanted : Math.round(messages / seconds / 2)
    collectGarbage()
    latencies.reset()
    pacer = createPacer(pairs, rate, send, createSamples(latencies.capacity))
    latency.push(await measureLatency(c, rate, pacer, pairs, latencies, () => failure))
  }

  finished = true
  for (const pair of pairs) {
    pair.sender.write(closeFrame(1000))
    pair.sender.end()
    pair.receiver.end()
  }
  if (failure !== null) throw failure

  const result: GeneratorResult = {
    messagesPerSec: messages / seconds,
    mbPerSec: (messages * c.size) / seconds / 1e6,
    serverCpuPercent: ((end.serverTicks - start.serverTicks) / TICKS_PER_SECOND / seconds) * 100,
    serverRssBytes: end.serverRss,
    generatorCpuPercent: ((end.ownCpu - start.ownCpu) / 1e6 / seconds) * 100,
    latency,
    framesPerWrite,
    messagesChecked: pairs.reduce((n, p) => n + p.received, 0),
  }
  // Exit once the result is out: a server that never closes its side must not hold the run.
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0))
}

/**
 * Send at a fixed total rate, each pair at its share, and take one-way latencies after a short
 * settle. `pump` runs on a 1 ms tick and writes what each pair owes in one batch, as a client
 * that buffers for a millisecond would; a read refills only a pair its window held back, so
 * the number of writes follows the tick, not the rate.
 *
 * A frame carries the time it was written, so its latency is the server's and the kernel's,
 * not the generator's timer: Node's 1 ms timer fires 1 to 4 ms late on two shared cores, and
 * stamping the time a frame was due charged that to every server alike. A frame that a full
 * window held back carries the time it was due instead: that wait is the server's doing and
 * counts (no coordinated omission). How late the pacer itself wrote is kept in `lateness`.
 */
function createPacer(
  pairs: Pair[],
  rate: number,
  send: (pair: Pair, count: number, stamp: number, spacing: number) => void,
  lateness: Samples,
) {
  const origin = performance.now()
  const msPerMessage = (1000 * pairs.length) / rate
  // Spread the pairs' schedules over one message interval, so their frames do not all fall due at once.
  const offset = (pair: Pair): number => (pair.index / pairs.length) * msPerMessage
  const handed = new Array<number>(pairs.length).fill(0)
  const heldBack = new Array<boolean>(pairs.length).fill(false)
  // When the phase ended: frames due before it that a full window still holds back are sent
  // as reads make room, and counted, or a stall at the phase's end would vanish from the figures.
  let stoppedAt = Infinity
  function sendDue(pair: Pair, at: number): void {
    const now = Math.min(at, stoppedAt)
    const owed = Math.floor((now - origin - offset(pair)) / msPerMessage) + 1 - handed[pair.index]!
    const room = pair.window - (pair.sent - pair.received)
    const count = Math.min(room, owed)
    const wasHeldBack = heldBack[pair.index]!
    heldBack[pair.index] = owed > room
    if (count <= 0) return
    const firstDue = origin + offset(pair) + handed[pair.index]! * msPerMessage
    if (wasHeldBack) {
      send(pair, count, firstDue, msPerMessage)
    } else {
      for (let k = 0; k < count; k++) lateness.add(now - (firstDue + k * msPerMessage))
      send(pair, count, now, 0)
    }
    handed[pair.index] = handed[pair.index]! + count
  }
  return {
    pump(): void {
      if (stoppedAt !== Infinity) return
      const now = performance.now()
      for (const pair of pairs) sendDue(pair, now)
    },
    refill(pair: Pair): void {
      if (heldBack[pair.index]!) sendDue(pair, performance.now())
    },
    stop: () => {
      stoppedAt = performance.now()
    },
    elapsedMs: () => performance.now() - origin,
    lateness,
  }
}

async function measureLatency(
  c: GeneratorCase,
  rate: number,
  pacer: ReturnType<typeof createPacer>,
  pairs: Pair[],
  latencies: Samples,
  failed: () => Error | null,
): Promise<LatencyResult> {
  const settleMs = Math.min(500, c.latencyMs / 4)
  let dropFrom = -1
  let lateFrom = 0
  let start: ReturnType<typeof snapshot> | null = null
  while (pacer.elapsedMs() < c.latencyMs && failed() === null) {
    if (dropFrom === -1 && pacer.elapsedMs() >= settleMs) {
      dropFrom = latencies.count()
      lateFrom = pacer.lateness.count()
      start = snapshot(c.pid, 0)
    }
    pacer.pump()
    await sleep(1)
  }
  pacer.stop()
  const end = snapshot(c.pid, 0)
  const seconds = start === null ? NaN : (end.at - start.at) / 1000
  const serverCpuPercent =
    start === null ? NaN : ((end.serverTicks - start.serverTicks) / TICKS_PER_SECOND / seconds) * 100
  const generatorCpuPercent = start === null ? NaN : ((end.ownCpu - start.ownCpu) / 1e6 / seconds) * 100
  await drain(pairs, failed)
  const samples = latencies.from(Math.max(dropFrom, 0)).sort()
  const pacerP99Ms = quantile(pacer.lateness.from(lateFrom).sort(), 0.99)
  return {
    rate,
    samples: samples.length,
    p50Ms: quantile(samples, 0.5),
    p99Ms: quantile(samples, 0.99),
    p999Ms: quantile(samples, 0.999),
    pacerP99Ms,
    serverCpuPercent,
    generatorCpuPercent,
  }
}

function quantile(sorted: Float64Array, q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

/** Wait until every frame sent has been received; anything missing by then is a failure. */
async function drain(pairs: Pair[], failed: () => Error | null): Promise<void> {
  const deadline = Date.now() + 10_000
  while (pairs.some((p) => p.received < p.sent)) {
    if (failed() !== null) return
    if (Date.now() > deadline) {
      const short = pairs
        .filter((p) => p.received < p.sent)
        .map((p) => `pair ${p.index}: ${p.sent - p.received} missing`)
      throw new Error(`frames never arrived: ${short.slice(0, 5).join(', ')}`)
    }
    await sleep(5)
  }
}

/**
 * A full collection between phases (the process runs with --expose-gc): setting up sessions
 * with fetch leaves megabytes of garbage in the old generation, and its collection, about
 * 8 ms, otherwise fell inside the latency phase.
 */
function collectGarbage(): void {
  ;(globalThis as { gc?: () => void }).gc?.()
}

type Samples = ReturnType<typeof createSamples>

/** Latency samples in a preallocated array, so measuring allocates nothing; past capacity they are dropped. */
function createSamples(capacity: number) {
  const values = new Float64Array(capacity)
  let n = 0
  return {
    add: (ms: number): void => {
      if (n < capacity) values[n++] = ms
    },
    count: (): number => n,
    reset: (): void => {
      n = 0
    },
    capacity,
    from: (start: number): Float64Array => values.slice(start, n),
  }
}

function snapshot(pid: number, received: number) {
  return { at: performance.now(), received, serverTicks: cpuTicks(pid), serverRss: rssBytes(pid), ownCpu: cpuUsed() }
}

function cpuUsed(): number {
  const { user, system } = process.cpuUsage()
  return user + system
}

async function createSession(
  url: string,
  token?: string,
): Promise<{ id: string; initiator_token: string; responder_token: string }> {
  const response = await fetch(`${url}/admin/sessions`, {
    method: 'POST',
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  })
  if (response.status !== 201) throw new Error(`POST /admin/sessions answered ${response.status}`)
  return (await response.json()) as { id: string; initiator_token: string; responder_token: string }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

main().catch((error: unknown) => {
  process.stderr.write(`load generator: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
