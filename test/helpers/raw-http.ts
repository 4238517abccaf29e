// One HTTP/1.1 request written byte for byte on a fresh TCP connection: what a hostile client
// sends, which fetch and node:http refuse to build. The answer's status line is all the fuzz
// stage reads, with how the exchange ended: answered, closed without an answer, or still
// waiting when the patience ran out (a server waiting for a body it was promised).
import { connect } from 'node:net'

export type RawAnswer = { status: number | null; head: string; ended: 'answered' | 'closed' | 'waiting' }

/**
 * Writes `bytes` to 127.0.0.1:port and resolves with the first status line, or null when the
 * server closes without one or has not answered within `patienceMs` (a server waiting for a
 * body it was promised, or for the rest of a request it could not parse). Not half-closed:
 * uWS drops a request whose client half-closes before its asynchronous answer is ready.
 */
export function rawRequest (port: number, bytes: Buffer | string, patienceMs = 120): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let head = ''
    let waited = false
    const done = (): void => {
      clearTimeout(patience)
      socket.destroy()
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(head)
      const ended = match !== null ? 'answered' : waited ? 'waiting' : 'closed'
      resolve({ status: match === null ? null : Number(match[1]), head: head.split('\r\n\r\n')[0] ?? '', ended })
    }
    const patience = setTimeout(() => { waited = true; done() }, patienceMs)
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1')
      if (head.includes('\r\n\r\n')) done()
    })
    socket.on('error', done)
    socket.on('close', done)
    socket.write(bytes)
  })
}

/** A request from its parts, UTF-8 on the wire; `body` gets a matching Content-Length unless `headers` name one. */
export function rawRequestBytes (method: string, target: string, headers: Array<[string, string]>, body = ''): Buffer {
  const lines = [`${method} ${target} HTTP/1.1`, 'host: 127.0.0.1']
  const named = new Set(headers.map(([name]) => name.toLowerCase()))
  for (const [name, value] of headers) lines.push(`${name}: ${value}`)
  if (body !== '' && !named.has('content-length') && !named.has('transfer-encoding')) lines.push(`content-length: ${Buffer.byteLength(body)}`)
  return Buffer.from(lines.join('\r\n') + '\r\n\r\n' + body, 'utf8')
}
