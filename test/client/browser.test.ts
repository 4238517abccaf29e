// The browser build in real Chromium: two pages load client/dist/browser.js from a static
// server and talk through the relay, the slot token in ?token= as browsers must send it.
import { createReadStream, existsSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join, normalize } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { adminClient } from '../../client/src/index.js'
import type * as Browser from '../../client/src/browser.js'
import { launchBrowser, newContext } from '../helpers/browser.js'
import { startTestRelay } from '../helpers/relay.js'

type BrowserClient = typeof Browser

const DIST = new URL('../../client/dist/', import.meta.url).pathname

async function staticServer(t: Test): Promise<string> {
  if (!existsSync(join(DIST, 'browser.js')))
    throw new Error('client/dist is missing: run "npm run build" first (npm test builds it)')
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname
    if (path === '/') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>relay</title>')
      return
    }
    const file = normalize(join(DIST, path))
    if (!file.startsWith(DIST) || !existsSync(file)) {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, { 'content-type': 'text/javascript' })
    createReadStream(file).pipe(res)
  })
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

t.test('two Chromium pages attach with the browser build and exchange text and binary messages', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn', '--allowed-origins', '127.0.0.1:*'])
  const origin = await staticServer(t)
  const created = await adminClient({ server: relay.http }).createSession()
  const url = `${relay.ws}/relay/${created.id}`
  const browser = await launchBrowser(t)
  const pages = await Promise.all(
    [0, 1].map(async () => {
      const page = await (await newContext(t, browser)).newPage()
      await page.goto(origin)
      return page
    }),
  )
  const [first, second] = pages as [(typeof pages)[0], (typeof pages)[0]]
  // each page keeps its connection on window and answers through evaluate
  const attachIn = (page: typeof first, token: string) =>
    page.evaluate(
      async ({ url, token }) => {
        // a URL the page resolves against its origin; the string hides it from tsc's resolution
        const module = '/browser.js'
        const client = (await import(module)) as BrowserClient
        const connection = await client.attach(url, token)
        const received: Array<{ type: string; data: string | number[] }> = []
        ;(globalThis as Record<string, unknown>).relay = { connection, received }
        void (async () => {
          for await (const m of connection) received.push(m.type === 'text' ? m : { type: 'binary', data: [...m.data] })
        })()
      },
      { url, token },
    )
  await attachIn(first, created.initiator_token)
  await attachIn(second, created.responder_token)
  await first.evaluate(async () => {
    const { connection } = (globalThis as Record<string, unknown>).relay as {
      connection: { send: (d: string | Uint8Array) => Promise<void> }
    }
    await connection.send('hello from page one')
    await connection.send(new Uint8Array([1, 2, 3]))
  })
  const got = await second.waitForFunction(() => {
    const { received } = (globalThis as Record<string, unknown>).relay as { received: unknown[] }
    return received.length >= 2 && received
  })
  t.same(await got.jsonValue(), [
    { type: 'text', data: 'hello from page one' },
    { type: 'binary', data: [1, 2, 3] },
  ])
  await second.evaluate(async () => {
    const { connection } = (globalThis as Record<string, unknown>).relay as {
      connection: { send: (d: string) => Promise<void>; close: () => Promise<unknown> }
    }
    await connection.send('and back')
  })
  const back = await first.waitForFunction(() => {
    const { received } = (globalThis as Record<string, unknown>).relay as { received: unknown[] }
    return received.length >= 1 && received
  })
  t.same(await back.jsonValue(), [{ type: 'text', data: 'and back' }])
  const closed = await first.evaluate(async () => {
    const { connection } = (globalThis as Record<string, unknown>).relay as {
      connection: { close: () => Promise<{ code: number }> }
    }
    return (await connection.close()).code
  })
  t.equal(closed, 1000)
})
