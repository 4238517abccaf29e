// A server that does not answer as the API documents (a body of endless bytes, garbage instead
// of JSON, an error page with terminal escapes) ends a command with exit 1 and a reason, after
// reading at most the cap: never a crash, never the whole body in memory.
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import t from 'tap'
import type { Test } from 'tap'
import { MAX_JSON_BYTES } from '../../wasmkube/src/http.js'
import { wasmkube } from '../helpers/wasmkube.js'

async function serve(
  t: Test,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; sent: () => number }> {
  let sent = 0
  const server = createServer((req, res) => {
    const write = res.write.bind(res)
    res.write = ((chunk: Buffer, ...rest: never[]) => {
      sent += chunk.length
      return write(chunk, ...rest)
    }) as typeof res.write
    handler(req, res)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sent: () => sent }
}

t.test('an endless body: exit 1 after reading about the cap, not the body', async (t) => {
  const chunk = Buffer.alloc(64 * 1024, 0x20)
  const { url, sent } = await serve(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    // Writes as fast as the client reads, without end: only the client stopping ends it.
    const more = (): void => {
      while (res.write(chunk)) {
        if (res.destroyed) return
      }
    }
    res.on('drain', more)
    more()
  })
  const outcome = await wasmkube(t, { WASMKUBE_SERVER: url })(['apps'])
  t.equal(outcome.code, 1)
  t.match(outcome.stderr, `larger than ${MAX_JSON_BYTES} bytes`)
  t.ok(sent() < 4 * MAX_JSON_BYTES, `stopped reading: ${sent()} bytes sent`)
})

t.test('a declared length over the cap is refused unread', async (t) => {
  const { url } = await serve(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(MAX_JSON_BYTES + 1) })
    res.write('[')
  })
  const outcome = await wasmkube(t, { WASMKUBE_SERVER: url })(['apps'])
  t.equal(outcome.code, 1)
  t.match(outcome.stderr, 'larger than')
})

t.test('garbage instead of JSON, on success or refusal: exit 1, its printable start quoted', async (t) => {
  let body: Buffer = Buffer.alloc(0)
  let status = 200
  const { url } = await serve(t, (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(body)
  })
  const cli = wasmkube(t, { WASMKUBE_SERVER: url })
  await fc.assert(
    fc.asyncProperty(
      fc.uint8Array({ maxLength: 2000 }),
      fc.constantFrom(200, 400, 401, 500, 503),
      async (bytes, code) => {
        body = Buffer.from(bytes)
        status = code
        let valid = true
        try {
          JSON.parse(body.toString('utf8'))
        } catch {
          valid = false
        }
        const outcome = await cli(['builds', 'x'])
        if (code !== 200 || !valid) {
          if (outcome.code !== 1) return false
        } else if (outcome.code !== 1 && outcome.code !== 0) return false
        // eslint-disable-next-line no-control-regex -- no terminal escapes pass through
        return !/[\u001b\u009b]/.test(outcome.stderr)
      },
    ),
    { numRuns: Number(process.env.FUZZ_RUNS ?? 100) },
  )
  t.pass('every answer ended in exit 1 (or 0 for valid JSON) without a terminal escape')
})

t.test('a refusal says what the server said; 401 without a token says how to get one', async (t) => {
  const { url } = await serve(t, (req, res) => {
    if (req.url === '/api/v1/applications')
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"missing bearer token"}')
    else res.writeHead(404).end()
  })
  const outcome = await wasmkube(t, { WASMKUBE_SERVER: url })(['apps'])
  t.equal(outcome.code, 1)
  t.match(outcome.stderr, 'wasmkube apps: 401 missing bearer token (log in with wasmkube login, or set WASMKUBE_TOKEN)')
  const withToken = await wasmkube(t, { WASMKUBE_SERVER: url, WASMKUBE_TOKEN: 'x.y.z' })(['apps'])
  t.match(withToken.stderr, '401 missing bearer token (log in again: wasmkube login)')
})
