// Baseline and ceiling: answer the WebSocket upgrade, then pipe the two peers' sockets into
// each other. No framing, no copies in JavaScript: what moving bytes through a user-space
// Node process costs. The clients' masked frames reach the other client as they are.
import { createServer } from 'node:http'
import type { Duplex } from 'node:stream'
import { acceptKey } from '../frames.js'
import { announce, createSessionStore } from './sessions.js'

const store = createSessionStore()
const waiting = new Map<string, Duplex>()
const server = createServer(store.handle)

server.on('upgrade', (req, socket, head) => {
  const target = store.slotOf(req)
  if (target === null) return socket.end('HTTP/1.1 401 Unauthorized\r\n\r\n')
  socket.write(
    'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      `Sec-WebSocket-Accept: ${acceptKey(String(req.headers['sec-websocket-key']))}\r\n\r\n`,
  )
  if (head.length > 0) socket.unshift(head)
  ;(socket as Duplex & { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true)
  const other = waiting.get(target.session.id)
  if (other === undefined) {
    socket.pause()
    waiting.set(target.session.id, socket)
    return
  }
  waiting.delete(target.session.id)
  store.forget(target.session.id)
  socket.pipe(other)
  other.pipe(socket)
  other.resume()
  const end = (): void => {
    socket.destroy()
    other.destroy()
  }
  socket.on('error', end)
  other.on('error', end)
  socket.on('close', end)
  other.on('close', end)
})

server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const address = server.address()
  announce(typeof address === 'object' && address !== null ? address.port : 0)
})
