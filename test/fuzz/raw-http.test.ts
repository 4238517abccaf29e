// The fuzz stage's raw client (test/helpers/raw-http.ts) reports what a fault looks like: a
// connection closed without an answer is 'closed', an answer held until the whole request
// arrived is read whenever it comes, and a request is made whole where its Content-Length
// allows, so a server waiting for a promised body is not mistaken for one sitting on a request.
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import t from 'tap'
import type { Test } from 'tap'
import { keepPromise, rawRequest, rawRequestBytes } from '../helpers/raw-http.js'

/** A server that hands each connection to `handle`; its port. */
async function server(t: Test, handle: (socket: Socket) => void): Promise<number> {
  const listener = createServer(handle)
  listener.listen(0, '127.0.0.1')
  await once(listener, 'listening')
  t.teardown(() => new Promise<void>((resolve) => listener.close(() => resolve())))
  return (listener.address() as AddressInfo).port
}

t.test('a connection closed without an answer is a close, not an answer', async (t) => {
  const port = await server(t, (socket) => socket.once('data', () => socket.destroy()))
  t.same(await rawRequest(port, rawRequestBytes('GET', '/', [])), { status: null, head: '', ended: 'closed' })
})

t.test('an answer that waits for the whole body is read, a 500 included', async (t) => {
  const port = await server(t, (socket) => {
    let seen = ''
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1')
      if (seen.endsWith('hello')) socket.end('HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n')
    })
  })
  const headers: Array<[string, string]> = [['content-length', '5']]
  const whole = keepPromise(headers, 'hel')
  t.same(whole, { body: 'hel  ', whole: true }, 'the promised length filled in')
  const answer = await rawRequest(port, rawRequestBytes('POST', '/', headers, 'hello'))
  t.same([answer.status, answer.ended], [500, 'answered'])
})

t.test('a request that cannot be made whole is half-closed, so the wait ends on an event', async (t) => {
  const port = await server(t, (socket) => socket.on('end', () => socket.end()).resume())
  const headers: Array<[string, string]> = [['transfer-encoding', 'chunked']]
  const promise = keepPromise(headers, '')
  t.equal(promise.whole, false)
  t.same((await rawRequest(port, rawRequestBytes('POST', '/', headers), { end: !promise.whole })).ended, 'closed')
})

t.test('which requests keepPromise calls whole', async (t) => {
  t.same(keepPromise([], 'x'), { body: 'x', whole: true }, 'no length named: rawRequestBytes adds the right one')
  t.same(keepPromise([['Content-Length', ' 2 ']], ''), { body: '  ', whole: true }, 'spaces around the number')
  t.same(
    keepPromise([['content-length', 'abc']], ''),
    { body: '', whole: true },
    'not a number: answered as a bad request',
  )
  t.same(
    keepPromise([['content-length', '1']], 'abc'),
    { body: 'abc', whole: true },
    'more than promised: the rest is the next request',
  )
  t.same(
    keepPromise(
      [
        ['content-length', '1'],
        ['content-length', '2'],
      ],
      '',
    ),
    { body: '', whole: false },
    'two lengths',
  )
  t.same(keepPromise([['content-length', String(1 << 20)]], '', 1024), { body: '', whole: false }, 'past the limit')
})
