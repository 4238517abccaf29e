// One benchmark case in its own process: N session pairs, the initiator of each sends binary
// frames of one size as fast as its responder receives them (within a window), then at a
// fixed rate for latency. Every frame carries a sequence number and every receiver checks
// order and count: a single lost or reordered frame fails the run.
//
// Input: one JSON argument (GeneratorCase). Output: one JSON line (GeneratorResult).
import type { Socket } from 'node:net'
import { clientFrameHeader, closeFrame, createFrameParser, PREFIX_BYTES, rawWebSocket } from './frames.js'
import { collectGarbage, drain, measureLatency, sleep, snapshot } from './generator-measure.js'
import { createPacer } from './generator-pacer.js'
import { createSamples } from './generator-samples.js'
import { createSession } from './generator-session.js'
import type { GeneratorCase, GeneratorResult, LatencyResult, Pair } from './generator-types.js'
import { TICKS_PER_SECOND } from './proc.js'

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

main().catch((error: unknown) => {
  process.stderr.write(`load generator: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
