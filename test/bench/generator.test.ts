// The benchmark must never report speed that hides loss: its frame parser reads every frame
// whatever the chunking, and the load generator fails when one frame is lost or reordered.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createServer } from 'node:http'
import type { Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import type { Test } from 'tap'
import { createSessionStore } from '../../bench/baselines/sessions.js'
import { acceptKey, clientFrameHeader, createFrameParser } from '../../bench/frames.js'

const generator = fileURLToPath(new URL('../../dist/bench/load-generator.js', import.meta.url))

function frame(seq: number, size: number, masked: boolean): Buffer {
  const payload = Buffer.alloc(size)
  payload.writeUInt32LE(seq, 0)
  payload.writeDoubleLE(seq + 0.5, 8)
  if (masked) return Buffer.concat([clientFrameHeader(size), payload])
  const header = clientFrameHeader(size)
  header[1] = header[1]! & 0x7f // a server frame: no mask bit, no key
  return Buffer.concat([header.subarray(0, header.length - 4), payload])
}

t.test('the parser reads every frame, whatever the chunk boundaries', async (t) => {
  const sizes = [16, 17, 125, 126, 127, 1000, 65535, 65536, 70000]
  for (const masked of [false, true]) {
    const stream = Buffer.concat(sizes.map((size, seq) => frame(seq, size, masked)))
    for (const chunkSize of [1, 2, 3, 7, 16, 1000, stream.length]) {
      const got: Array<[number, number, number]> = []
      const parse = createFrameParser(
        (seq, sentAt, length) => got.push([seq, sentAt, length]),
        () => t.fail('no close frame was sent'),
      )
      for (let i = 0; i < stream.length; i += chunkSize) parse(stream.subarray(i, i + chunkSize))
      t.same(
        got,
        sizes.map((size, seq) => [seq, seq + 0.5, size]),
        `${masked ? 'masked' : 'unmasked'} frames in ${chunkSize}-byte chunks`,
      )
    }
  }
})

t.test('the load generator fails loudly on a lost or a reordered frame', async (t) => {
  if (!existsSync(generator)) throw new Error(`${generator} is missing: run "npm run build:bench" first`)
  for (const fault of ['none', 'lose', 'reorder'] as const) {
    const port = await lossyForwarder(t, fault)
    const run = await runGenerator(port)
    if (fault === 'none') {
      t.equal(run.code, 0, 'a faithful forwarder passes')
      const result = JSON.parse(run.stdout)
      t.ok(result.messagesChecked > 200, 'frames were checked')
      // 1,000 messages/s for 500 ms less the settle: paced frames arrive and carry their write times.
      const [paced] = result.latency
      t.ok(paced.samples >= 200, 'the paced phase sent at its rate')
      t.ok(paced.p50Ms >= 0 && paced.p50Ms <= paced.p99Ms, 'latency percentiles are ordered and not negative')
      t.ok(paced.p999Ms >= paced.p99Ms, 'p99.9 is reported beside p99')
      t.ok(paced.pacerP99Ms >= 0, 'how late the pacer wrote is reported apart')
      t.ok(result.framesPerWrite > 1, 'batching clients write many frames per call')
    } else {
      t.equal(run.code, 1, `${fault}: the run fails`)
      t.match(run.stderr, /lost or reordered/, `${fault}: and says why`)
    }
  }
})

t.test('single writes: one frame per write call, still checked frame by frame', async (t) => {
  const port = await lossyForwarder(t, 'none')
  const run = await runGenerator(port, 'single')
  t.equal(run.code, 0, run.stderr)
  const result = JSON.parse(run.stdout)
  t.equal(result.framesPerWrite, 1, 'as a browser sends')
  t.ok(result.messagesChecked > 200, 'frames were checked')
})

t.test('one latency phase per rate, in the order given', async (t) => {
  const port = await lossyForwarder(t, 'none')
  const run = await runGenerator(port, 'batched', [500, 1000])
  t.equal(run.code, 0, run.stderr)
  t.same(
    JSON.parse(run.stdout).latency.map((l: { rate: number }) => l.rate),
    [500, 1000],
  )
})

t.test('frames a full window held back count their wait (no coordinated omission)', async (t) => {
  // The forwarder stalls for 300 ms in the paced phase, 25 ms after the settle: of the 375
  // samples, the 300 due during the stall wait 300 ms down to 0, two thirds of all samples
  // over 50 ms. Only the 16 frames in flight are written before it; the rest are held back by
  // the window, and stamped with their write times they would hide the stall (p50 near 1 ms).
  const port = await lossyForwarder(t, 'stall')
  const run = await runGenerator(port)
  t.equal(run.code, 0, run.stderr)
  const [latency] = JSON.parse(run.stdout).latency
  t.ok(latency.p50Ms > 50, `the stall shows in the median, not only in the tail (p50 ${latency.p50Ms} ms)`)
  // Every frame due between the settle and the phase's end is a sample, those the window still
  // held back when the phase ended too: a slow start that pushes the stall past the end (a
  // loaded machine) must not drop them.
  t.ok(latency.samples >= 350, `every frame due in the phase is counted (${latency.samples} of about 375)`)
})

/**
 * A forwarder that pipes 16-byte frames between the peers of a session, except that it drops
 * the 100th frame (`lose`), swaps the 100th and 101st (`reorder`), or holds back everything
 * from the 150th paced (time-stamped) frame on for 300 ms (`stall`).
 */
async function lossyForwarder(t: Test, fault: 'none' | 'lose' | 'reorder' | 'stall'): Promise<number> {
  const FRAME = 2 + 4 + 16 // masked client frame of a 16-byte payload
  const store = createSessionStore()
  const waiting = new Map<string, Socket>()
  const server = createServer(store.handle)
  const upgraded = new Set<Socket>()
  server.on('upgrade', (req, socket: Socket) => {
    upgraded.add(socket)
    const target = store.slotOf(req)
    if (target === null) return socket.end('HTTP/1.1 401 Unauthorized\r\n\r\n')
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${acceptKey(String(req.headers['sec-websocket-key']))}\r\n\r\n`,
    )
    const other = waiting.get(target.session.id)
    if (other === undefined) return void waiting.set(target.session.id, socket)
    // The responder attached first: it receives what the initiator (this socket) sends.
    let pending = Buffer.alloc(0)
    let index = 0
    let swapped: Buffer | null = null
    let paced = 0
    let stalled: Buffer[] | null = null
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk])
      while (pending.length >= FRAME) {
        const one = pending.subarray(0, FRAME)
        pending = pending.subarray(FRAME)
        index++
        if (fault === 'lose' && index === 100) continue
        if (fault === 'reorder' && index === 100) {
          swapped = Buffer.from(one)
          continue
        }
        if (fault === 'stall' && one.readDoubleLE(FRAME - 16 + 8) !== 0 && ++paced === 150) {
          stalled = []
          setTimeout(() => {
            for (const held of stalled!) other.write(held)
            stalled = null
          }, 300)
        }
        if (stalled !== null) {
          stalled.push(Buffer.from(one))
          continue
        }
        other.write(one)
        if (swapped !== null) {
          other.write(swapped)
          swapped = null
        }
      }
    })
    socket.on('error', () => {})
    other.on('error', () => {})
  })
  // closeAllConnections() does not reach upgraded sockets: end those by hand.
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of upgraded) socket.destroy()
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as { port: number }).port
}

function runGenerator(
  port: number,
  writes: 'batched' | 'single' = 'batched',
  latencyRates = [1000],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const input = {
    url: `http://127.0.0.1:${port}`,
    pid: process.pid,
    size: 16,
    pairs: 1,
    warmupMs: 100,
    durationMs: 200,
    latencyRates,
    latencyMs: 500,
    writes,
    windowBytes: 1 << 20,
    windowMessages: 16,
  }
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [generator, JSON.stringify(input)], {
      env: { PATH: process.env.PATH },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => {
      stdout += c
    })
    child.stderr.on('data', (c) => {
      stderr += c
    })
    child.on('exit', (code) => resolve({ code, stdout, stderr }))
  })
}
