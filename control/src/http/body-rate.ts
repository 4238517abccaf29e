// A minimum rate for request bodies, the way Kestrel's MinRequestBodyDataRate works: a body
// must bring at least `minBytes` in every `windowMs`, or its connection is cut. Without it a
// client (authenticated or not: this runs before authentication) can hold a socket and a
// request forever by trickling a byte now and then. Slow but honest uploads stay above the
// rate and pass. Counted at the socket (bytesRead), because reading the request stream here
// would take the body from the parser that needs it.
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance } from 'fastify'

export type BodyRate = { minBytes: number; windowMs: number }

export function enforceBodyRate(app: FastifyInstance, rate: BodyRate): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const raw = request.raw
    if (!hasBody(raw) || raw.complete) return done()
    const socket = raw.socket
    let seen = socket.bytesRead
    const timer = setInterval(() => {
      if (raw.complete || socket.destroyed) return clearInterval(timer)
      const now = socket.bytesRead
      const received = now - seen
      seen = now
      // Bytes waiting unread in the request stream: the server is the slow one (a handler
      // not reading yet), and the client cannot be blamed for the socket being paused.
      if (raw.readableLength > 0) return
      if (received >= rate.minBytes) return
      clearInterval(timer)
      request.log.info(
        { received, windowMs: rate.windowMs, minBytes: rate.minBytes },
        'request body slower than the minimum rate: connection closed',
      )
      socket.destroy()
    }, rate.windowMs)
    // The body's end (or a closed connection) ends the watch, not the response: after an early
    // answer (a 401, a 413) Node still reads the rest of the body off the socket, and a
    // trickle there would hold the connection as well. The next request gets its own watch.
    raw.once('close', () => clearInterval(timer))
    done()
  })
}

function hasBody(raw: IncomingMessage): boolean {
  return raw.headers['transfer-encoding'] !== undefined || Number(raw.headers['content-length'] ?? 0) > 0
}
