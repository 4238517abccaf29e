// npm run bench:client -- [--size 256MiB] [--runs 3] [--json]
//
// Throughput of the client's `relay attach` pipes against raw `ws` peers over the same relay:
// `--size` bytes from one peer to the other, each way `--runs` times, in turn. The relay runs
// in its own process as in production (servers.ts). relay attach: two processes, stdin fed
// and stdout drained by this one, timed from spawn to the receiver's exit (process start
// included, reported apart). Raw ws: both peers in this process, 64 KiB binary frames, the
// receiver acknowledging every MiB and the sender keeping at most 4 MiB unacknowledged: the
// least flow control that keeps the relay from closing the session with 4003 (without it, it
// does), so the ceiling the CLI's stdin/stdout path and framing are measured against.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import WebSocket from 'ws'
import { parseBytes } from '@session-relay/common/config/settings'
import { readFlags } from './flags.js'
import { machineInfo } from './proc.js'
import { createSessions, scriptPath, startServer } from './servers.js'

const MiB = 1024 * 1024
let size = 256 * MiB
let runs = 3
const { json } = readFlags(process.argv.slice(2), {
  '--size': (v) => {
    size = parseBytes(v)
  },
  '--runs': (v) => {
    runs = Number(v)
  },
})
const CLI = scriptPath('../../client/dist/cli/main.js')
const block = randomBytes(MiB)

async function viaCli(port: number): Promise<{ seconds: number; startSeconds: number }> {
  const [session] = await createSessions(port, 1)
  if (session === undefined) throw new Error('no session')
  const url = `ws://127.0.0.1:${port}/relay/${session.id}`
  const started = performance.now()
  const sender = spawn(process.execPath, [CLI, 'attach', url], {
    env: { ...process.env, RELAY_TOKEN: session.initiator_token },
    stdio: ['pipe', 'ignore', 'inherit'],
  })
  const receiver = spawn(process.execPath, [CLI, 'attach', url], {
    env: { ...process.env, RELAY_TOKEN: session.responder_token },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let firstByte = 0
  let received = 0
  receiver.stdout.on('data', (chunk: Buffer) => {
    if (firstByte === 0) firstByte = performance.now()
    received += chunk.length
  })
  const exited = Promise.all(
    [sender, receiver].map((child) => new Promise<number | null>((resolve) => child.once('close', resolve))),
  )
  for (let sent = 0; sent < size; sent += MiB) {
    if (!sender.stdin.write(block.subarray(0, Math.min(MiB, size - sent))))
      await new Promise((resolve) => sender.stdin.once('drain', resolve))
  }
  sender.stdin.end()
  const codes = await exited
  if (received !== size || codes.some((code) => code !== 0))
    throw new Error(`relay attach: ${received} of ${size} bytes, exit codes ${codes.join(', ')}`)
  return { seconds: (performance.now() - started) / 1000, startSeconds: (firstByte - started) / 1000 }
}

async function viaWs(port: number): Promise<{ seconds: number }> {
  const [session] = await createSessions(port, 1)
  if (session === undefined) throw new Error('no session')
  const url = `ws://127.0.0.1:${port}/relay/${session.id}`
  const open = (token: string) =>
    new Promise<WebSocket>((resolve, reject) => {
      const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false })
      socket.once('open', () => resolve(socket))
      socket.once('error', reject)
    })
  const a = await open(session.initiator_token)
  const b = await open(session.responder_token)
  const frame = block.subarray(0, 64 * 1024)
  const started = performance.now()
  const done = new Promise<void>((resolve, reject) => {
    let received = 0
    let acked = 0
    b.on('message', (data: Buffer) => {
      received += data.length
      if (received - acked >= MiB || received >= size) {
        acked = received
        b.send(String(received))
      }
      if (received >= size) resolve()
    })
    b.once('close', (code) => reject(new Error(`receiver closed ${code}`)))
  })
  let ackedBySender = 0
  let wake: (() => void) | null = null
  a.on('message', (data: Buffer) => {
    ackedBySender = Number(data.toString())
    wake?.()
    wake = null
  })
  for (let sent = 0; sent < size; sent += frame.length) {
    while (sent - ackedBySender >= 4 * MiB)
      await new Promise<void>((resolve) => {
        wake = resolve
      })
    a.send(frame)
  }
  await done
  const seconds = (performance.now() - started) / 1000
  a.close()
  b.close()
  return { seconds }
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)] as number
const relay = await startServer('relay')
try {
  const cli: number[] = []
  const cliStart: number[] = []
  const ws: number[] = []
  for (let run = 0; run < runs; run++) {
    const c = await viaCli(relay.port)
    cli.push(size / MiB / c.seconds)
    cliStart.push(c.startSeconds)
    ws.push(size / MiB / (await viaWs(relay.port)).seconds)
  }
  const result = {
    size,
    runs,
    cliMiBps: median(cli),
    cliStartSeconds: median(cliStart),
    wsMiBps: median(ws),
    ratio: median(cli) / median(ws),
    machine: machineInfo(),
  }
  if (json) process.stdout.write(`${JSON.stringify(result)}\n`)
  else {
    process.stdout.write(`${(size / MiB).toFixed(0)} MiB, median of ${runs} runs\n`)
    process.stdout.write(
      `relay attach pipes: ${result.cliMiBps.toFixed(1)} MiB/s (spawn to receiver exit; first byte after ${result.cliStartSeconds.toFixed(2)} s)\n`,
    )
    process.stdout.write(`raw ws peers:       ${result.wsMiBps.toFixed(1)} MiB/s\n`)
    process.stdout.write(`ratio:              ${(result.ratio * 100).toFixed(0)}%\n`)
  }
} finally {
  relay.process.kill()
}
