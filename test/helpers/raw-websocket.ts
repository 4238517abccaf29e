// A WebSocket client written by hand on a TCP socket, for frames no library would send
// (reserved bits, unmasked, fragments past a limit) and for a peer that never reads.
import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import type { Socket } from 'node:net'

/** One client frame, masked with a zero key (so the payload goes as it is), up to 64 KiB of payload. */
export function frame(opcode: number, payload: Buffer, fin = true, rsv1 = false): Buffer {
  const length = payload.length
  const extended = length < 126 ? Buffer.alloc(0) : Buffer.alloc(2)
  if (length >= 126) extended.writeUInt16BE(length)
  const first = (fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode
  return Buffer.concat([Buffer.from([first, 0x80 | (length < 126 ? length : 126)]), extended, Buffer.alloc(4), payload])
}

export type RawPeer = {
  socket: Socket
  /** The 101 response's head. */
  response: string
  /** Resolves when the TCP connection has closed. */
  ended: Promise<void>
}

/** Attach to `path` with the slot token; rejects unless the answer is 101. `headers` go into the request as they are. */
export function rawUpgrade(port: number, path: string, token: string, headers: string[] = []): Promise<RawPeer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const ended = new Promise<void>((resolveEnd) => socket.on('close', () => resolveEnd()))
    socket.on('error', () => {})
    socket.write(
      [
        `GET ${path} HTTP/1.1`,
        `Host: 127.0.0.1:${port}`,
        'Upgrade: websocket',
        'Connection: Upgrade',
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
        'Sec-WebSocket-Version: 13',
        ...headers,
        `Authorization: Bearer ${token}`,
        '',
        '',
      ].join('\r\n'),
    )
    let head = ''
    socket.on('data', function onData(chunk: Buffer) {
      head += chunk.toString('latin1')
      if (!head.includes('\r\n\r\n')) return
      socket.off('data', onData)
      if (!head.startsWith('HTTP/1.1 101')) return reject(new Error(`upgrade refused: ${head.split('\r\n')[0]}`))
      resolve({ socket, response: head, ended })
    })
  })
}
