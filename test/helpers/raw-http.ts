// One HTTP/1.1 request written byte for byte on a fresh TCP connection: what a hostile client
// sends, which fetch and node:http refuse to build. The answer's status line is all the fuzz
// stage reads, with how the exchange ended: answered, or closed without an answer. There is no
// deadline: a server that sits on a request hangs the test until tap's timeout fails it, and a
// late answer (a 500 after a slow path) is read like any other.
import { connect } from 'node:net'

export type RawAnswer = { status: number | null; head: string; ended: 'answered' | 'closed' }

/**
 * Writes `bytes` to 127.0.0.1:port and resolves with the first answer's status line, or null
 * when the server closes without one. `end` half-closes after the write: for a request that
 * promises more than it sends (a body never sent), so the server's wait ends on an event, the
 * end of the stream, and it answers or closes. Otherwise not half-closed: uWS drops a request
 * whose client half-closes before its asynchronous answer is ready.
 */
export function rawRequest(port: number, bytes: Buffer | string, options: { end?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let head = ''
    const done = (): void => {
      socket.destroy()
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(head)
      resolve({
        status: match === null ? null : Number(match[1]),
        head: head.split('\r\n\r\n')[0] ?? '',
        ended: match !== null ? 'answered' : 'closed',
      })
    }
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1')
      if (head.includes('\r\n\r\n')) done()
    })
    socket.on('error', done)
    socket.on('close', done)
    socket.write(bytes)
    if (options.end === true) socket.end()
  })
}

/** A request from its parts, UTF-8 on the wire; `body` gets a matching Content-Length unless `headers` name one. */
export function rawRequestBytes(method: string, target: string, headers: Array<[string, string]>, body = ''): Buffer {
  const lines = [`${method} ${target} HTTP/1.1`, 'host: 127.0.0.1']
  const named = new Set(headers.map(([name]) => name.toLowerCase()))
  for (const [name, value] of headers) lines.push(`${name}: ${value}`)
  if (body !== '' && !named.has('content-length') && !named.has('transfer-encoding'))
    lines.push(`content-length: ${Buffer.byteLength(body)}`)
  return Buffer.from(lines.join('\r\n') + '\r\n\r\n' + body, 'utf8')
}

/**
 * `body` made as long as a single Content-Length among `headers` promises (up to `limit` bytes),
 * so the request is whole; `whole` false when it still promises more than it sends (a
 * Transfer-Encoding, several lengths, one past the limit), which only the end of the stream ends.
 */
export function keepPromise(
  headers: Array<[string, string]>,
  body: string,
  limit = 64 * 1024,
): { body: string; whole: boolean } {
  const lengths = headers.filter(([name]) => name.toLowerCase() === 'content-length')
  if (headers.some(([name]) => name.toLowerCase() === 'transfer-encoding') || lengths.length > 1)
    return { body, whole: false }
  if (lengths.length === 0) return { body, whole: true }
  const text = lengths[0]![1].trim()
  if (!/^\d{1,9}$/.test(text)) return { body, whole: true }
  const promised = Number(text)
  const sent = Buffer.byteLength(body)
  if (promised <= sent) return { body, whole: true }
  return promised - sent > limit ? { body, whole: false } : { body: body + ' '.repeat(promised - sent), whole: true }
}
