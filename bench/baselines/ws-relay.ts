// Baseline: the relay most Node developers would write, on the `ws` package. Two peers per
// session; each message goes to the other peer with its text/binary type, and messages for
// a peer not yet attached wait in order. No auth, no limits: only the forwarding is compared.
import { createServer } from 'node:http'
import { WebSocketServer } from 'ws'
import type { RawData, WebSocket } from 'ws'
import { announce, createSessionStore } from './sessions.js'

const store = createSessionStore()
const peers = new Map<string, [WebSocket | null, WebSocket | null]>()
const held = new Map<string, Array<[RawData, boolean]>>()
const server = createServer(store.handle)
const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 0 })

server.on('upgrade', (req, socket, head) => {
  const target = store.slotOf(req)
  if (target === null) return socket.end('HTTP/1.1 401 Unauthorized\r\n\r\n')
  wss.handleUpgrade(req, socket, head, (ws) => {
    const { session, slot } = target
    const pair = peers.get(session.id) ?? [null, null]
    peers.set(session.id, pair)
    pair[slot] = ws
    const waiting = held.get(`${session.id}/${slot}`) ?? []
    held.delete(`${session.id}/${slot}`)
    for (const [data, isBinary] of waiting) ws.send(data, { binary: isBinary })
    ws.on('message', (data, isBinary) => {
      const other = pair[1 - slot]
      if (other != null) other.send(data, { binary: isBinary })
      else {
        const key = `${session.id}/${1 - slot}`
        let queue = held.get(key)
        if (queue === undefined) held.set(key, (queue = []))
        queue.push([data, isBinary])
      }
    })
    ws.on('close', (code) => {
      pair[slot] = null
      const other = pair[1 - slot]
      if (other != null) other.close(code === 1005 || code === 1006 ? 1000 : code)
      if (pair[1 - slot] === null) {
        peers.delete(session.id)
        store.forget(session.id)
      }
    })
  })
})

server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const address = server.address()
  announce(typeof address === 'object' && address !== null ? address.port : 0)
})
