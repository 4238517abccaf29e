// Baseline and floor: the relay's own stack with nothing on top. The same uWebSockets.js build
// and Node as the relay, two sockets paired by path, each message forwarded to the other, and
// small messages batched per event-loop turn as the relay batches them (copied into one
// arena, written once per peer inside its cork at the end of the turn; 4 KiB and up sent at
// once when nothing is queued), because uWS does not cork the other socket from inside a
// message handler. No auth beyond a token compare, no limits, no counters but the one
// bench:cpu divides by: what the relay adds on top of uWS is what the ratio to this measures.
import { randomBytes } from 'node:crypto'
import uWS from 'uWebSockets.js'
import type { WebSocket } from 'uWebSockets.js'

type Pair = {
  id: string
  tokens: [string, string]
  peers: [Peer | null, Peer | null]
  held: [Uint8Array[], Uint8Array[]]
  binary: [boolean[], boolean[]]
}
type Side = { pair: Pair; slot: 0 | 1; queued: number[]; flushQueued: boolean }
type Peer = WebSocket<Side>

const DIRECT_SEND_MIN_BYTES = 4096
const ARENA_BYTES = 1024 * 1024

const pairs = new Map<string, Pair>()
let forwarded = 0
let arena = new Uint8Array(ARENA_BYTES)
let arenaUsed = 0
let flushScheduled = false
const toFlush: Side[] = []

function forward(from: Side, message: ArrayBuffer, isBinary: boolean): void {
  const slot = (1 - from.slot) as 0 | 1
  const peer = from.pair.peers[slot]
  const size = message.byteLength
  if (peer === null || peer === undefined) {
    from.pair.held[slot].push(new Uint8Array(message).slice())
    from.pair.binary[slot].push(isBinary)
    return
  }
  const to = peer.getUserData()
  if (to.queued.length === 0 && size >= DIRECT_SEND_MIN_BYTES) {
    peer.send(message, isBinary, false)
    forwarded++
    return
  }
  if (arenaUsed + size > arena.length) {
    const bigger = new Uint8Array(Math.max(arenaUsed + size, arena.length * 2))
    bigger.set(arena.subarray(0, arenaUsed))
    arena = bigger
  }
  arena.set(new Uint8Array(message), arenaUsed)
  to.queued.push(arenaUsed, size, isBinary ? 1 : 0)
  arenaUsed += size
  if (!to.flushQueued) {
    to.flushQueued = true
    toFlush.push(to)
  }
  if (!flushScheduled) {
    flushScheduled = true
    setImmediate(flush)
  }
}

function flush(): void {
  flushScheduled = false
  for (const side of toFlush) {
    side.flushQueued = false
    const peer = side.pair.peers[side.slot]
    const queued = side.queued
    side.queued = []
    if (peer === null) continue // gone since: a bare relay drops what it owed
    peer.cork(() => {
      for (let i = 0; i < queued.length; i += 3) {
        peer.send(arena.subarray(queued[i], queued[i]! + queued[i + 1]!), queued[i + 2] === 1, false)
      }
    })
    forwarded += queued.length / 3
  }
  toFlush.length = 0
  if (arena.length > ARENA_BYTES && arenaUsed <= ARENA_BYTES) arena = new Uint8Array(ARENA_BYTES)
  arenaUsed = 0
}

const app = uWS
  .App()
  .post('/admin/sessions', (res) => {
    const id = randomBytes(16).toString('base64url')
    const pair: Pair = {
      id,
      tokens: [randomBytes(16).toString('base64url'), randomBytes(16).toString('base64url')],
      peers: [null, null],
      held: [[], []],
      binary: [[], []],
    }
    pairs.set(id, pair)
    res.cork(() => {
      res
        .writeStatus('201 Created')
        .writeHeader('content-type', 'application/json')
        .end(JSON.stringify({ id, initiator_token: pair.tokens[0], responder_token: pair.tokens[1] }))
    })
  })
  .get('/healthz', (res) => {
    res.end('ok')
  })
  // The one number bench:cpu divides the server's CPU time by, in the relay's metric name.
  .get('/metrics', (res) => {
    res.end(`relay_messages_forwarded_total ${forwarded}\n`)
  })
  .ws<Side>('/relay/:id', {
    compression: uWS.DISABLED,
    maxPayloadLength: 16 * 1024 * 1024,
    maxBackpressure: 64 * 1024 * 1024,
    closeOnBackpressureLimit: false,
    idleTimeout: 120,
    sendPingsAutomatically: true,
    upgrade(res, req, context) {
      const pair = pairs.get(req.getParameter(0) ?? '')
      const token = /^Bearer (\S+)$/.exec(req.getHeader('authorization'))?.[1] ?? ''
      const slot = pair === undefined ? -1 : pair.tokens.indexOf(token)
      if (pair === undefined || slot === -1 || pair.peers[slot] !== null) {
        res.writeStatus('401 Unauthorized').end()
        return
      }
      const side: Side = { pair, slot: slot as 0 | 1, queued: [], flushQueued: false }
      res.upgrade(
        side,
        req.getHeader('sec-websocket-key'),
        req.getHeader('sec-websocket-protocol'),
        req.getHeader('sec-websocket-extensions'),
        context,
      )
    },
    open(ws) {
      const side = ws.getUserData()
      side.pair.peers[side.slot] = ws
      const held = side.pair.held[side.slot]
      const binary = side.pair.binary[side.slot]
      side.pair.held[side.slot] = []
      side.pair.binary[side.slot] = []
      ws.cork(() => {
        held.forEach((data, i) => ws.send(data, binary[i], false))
      })
    },
    message(ws, message, isBinary) {
      forward(ws.getUserData(), message, isBinary)
    },
    close(ws, code) {
      const side = ws.getUserData()
      side.pair.peers[side.slot] = null
      const other = side.pair.peers[1 - side.slot]
      if (other !== null && other !== undefined) other.end(code === 1005 || code === 1006 ? 1000 : code)
      else pairs.delete(side.pair.id)
    },
  })

app.listen('127.0.0.1', Number(process.argv[2] ?? 0), (socket) => {
  if (socket === false) {
    process.stderr.write('uws baseline: listen failed\n')
    process.exit(1)
  }
  process.stdout.write(JSON.stringify({ listening: uWS.us_socket_local_port(socket) }) + '\n')
})
