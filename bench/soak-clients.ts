// A child of bench/soak.ts: attaches one slot of every session it is given, then, once told to
// go, sends small numbered frames on each at a fixed rate and checks every frame that arrives
// for order. Reports per connection what it sent and received, so the parent can match each
// side's sends against the other side's receipts: any loss, reordering or close fails the run.
import { readFileSync } from 'node:fs'
import type { Socket } from 'node:net'
import { clientFrameHeader, createFrameParser, PREFIX_BYTES, rawWebSocket } from './frames.js'

export type SoakInput = {
  host: string
  port: number
  attaches: Array<{ id: string; token: string }>
  /** Messages per second per connection. */
  rate: number
  size: number
  durationMs: number
  /** How long to keep reading after the last send. */
  drainMs: number
}

export type SoakReport = {
  sent: number[]
  received: number[]
  outOfOrder: number
  closedByRelay: number
  errors: string[]
}

const CONCURRENCY = 200
const TICK_MS = 100

async function main(): Promise<void> {
  const input = JSON.parse(readFileSync(process.argv[2] as string, 'utf8')) as SoakInput
  const n = input.attaches.length
  const sockets = new Array<Socket>(n)
  const report: SoakReport = {
    sent: new Array<number>(n).fill(0),
    received: new Array<number>(n).fill(0),
    outOfOrder: 0,
    closedByRelay: 0,
    errors: [],
  }
  let finished = false
  const fail = (message: string): void => {
    if (report.errors.length < 20) report.errors.push(message)
  }

  let next = 0
  async function worker(): Promise<void> {
    while (next < n) {
      const i = next++
      const { id, token } = input.attaches[i]!
      const parse = createFrameParser(
        (seq) => {
          if (seq !== report.received[i]) {
            report.outOfOrder++
            fail(`connection ${i}: expected frame ${report.received[i]}, got ${seq}`)
          }
          report.received[i]!++
        },
        (code) => {
          report.closedByRelay++
          fail(`connection ${i}: the relay closed it with ${code}`)
        },
      )
      const socket = await rawWebSocket(input.host, input.port, `/relay/${id}`, token, parse)
      socket.on('error', (error) => fail(`connection ${i}: ${error.message}`))
      socket.on('close', () => {
        if (!finished) fail(`connection ${i}: closed`)
      })
      sockets[i] = socket
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  process.stdout.write(JSON.stringify({ attached: n }) + '\n')
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()))

  const header = clientFrameHeader(input.size)
  const credit = new Float64Array(n)
  const perTick = (input.rate * TICK_MS) / 1000
  const started = Date.now()
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (Date.now() - started >= input.durationMs) {
        clearInterval(timer)
        return resolve()
      }
      for (let i = 0; i < n; i++) {
        credit[i]! += perTick
        while (credit[i]! >= 1) {
          credit[i]! -= 1
          const frame = Buffer.alloc(header.length + input.size)
          header.copy(frame)
          frame.writeUInt32LE(report.sent[i]!, header.length)
          frame.writeDoubleLE(0, header.length + PREFIX_BYTES - 8)
          sockets[i]!.write(frame)
          report.sent[i]!++
        }
      }
    }, TICK_MS)
  })
  await new Promise((resolve) => setTimeout(resolve, input.drainMs))
  finished = true
  process.stdout.write(JSON.stringify(report) + '\n', () => {
    for (const socket of sockets) socket.destroy()
    process.exit(0)
  })
}

main().catch((error: unknown) => {
  process.stderr.write(`soak clients: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
