// Sending a log stream from the cluster as a text/plain answer: the upstream request ends
// when the caller goes away, so a disconnected follower holds nothing open in the cluster.
// When the process stops, each answer ends cleanly (its last chunk sent) rather than cut.
import { PassThrough } from 'node:stream'
import type { Readable } from 'node:stream'
import type { FastifyReply } from 'fastify'
import type { Draining } from './draining.js'

export function sendLogStream(
  reply: FastifyReply,
  upstream: Readable,
  abort: AbortController,
  draining: Draining,
): FastifyReply {
  // Through a stream of our own, so it can be ended while the cluster's goes on.
  const body = new PassThrough()
  upstream.on('error', (error) => body.destroy(error))
  upstream.pipe(body)
  const end = (): void => {
    upstream.unpipe(body)
    body.end()
  }
  draining.streams.add(end)
  if (draining.draining) end()
  reply.raw.on('close', () => {
    draining.streams.delete(end)
    abort.abort()
    upstream.destroy()
    // A caller that left mid-stream: the unfinished answer must not keep its socket open.
    if (!reply.raw.writableEnded) reply.request.raw.socket.destroy()
  })
  // A followed log may stay quiet for long: the caller gets the headers now, not with the first line.
  reply.raw.once('pipe', () => reply.raw.flushHeaders())
  // The cluster broke the stream off: end the caller's too, so it does not wait for more.
  upstream.on('aborted', () => reply.raw.destroy())
  return reply
    .type('text/plain; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .send(body)
}

export function sendLogText(reply: FastifyReply, text: string): FastifyReply {
  return reply
    .type('text/plain; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .send(text)
}
