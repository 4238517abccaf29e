// Node: `ws`, with the slot token in the Authorization header of the upgrade.
import WebSocket from 'ws'
import type { RawData } from 'ws'
import type { Connector } from './socket.js'

export const nodeConnector: Connector = (url, token, events) => {
  const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false })
  let opened = false
  let buffered = 0
  socket.on('open', () => {
    opened = true
    events.open()
  })
  socket.on('message', (data: RawData, isBinary: boolean) => {
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data)
    events.message(isBinary ? { type: 'binary', data: bytes } : { type: 'text', data: bytes.toString('utf8') })
  })
  socket.on('unexpected-response', (_request, response) => {
    const chunks: Buffer[] = []
    response.on('data', (chunk: Buffer) => {
      if (chunks.length < 16) chunks.push(chunk)
    })
    response.on('end', () => {
      events.refused(response.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'))
      socket.terminate()
    })
  })
  // Errors are followed by 'close' (code 1006), which is what the connection acts on.
  socket.on('error', () => {})
  socket.on('close', (code: number, reason: Buffer) => {
    // A close before 'open' that was not a refusal: no connection (1006).
    events.close(opened ? code : 1006, reason.toString('utf8'))
  })
  return {
    send: (data, written) => {
      buffered += data.length
      socket.send(data, { binary: typeof data !== 'string' }, () => {
        buffered -= data.length
        written()
      })
    },
    buffered: () => buffered,
    close: (code, reason) => socket.close(code, reason),
    pause: () => socket.pause(),
    resume: () => socket.resume(),
    terminate: () => socket.terminate(),
  }
}
