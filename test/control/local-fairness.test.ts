// The applications' URLs on this machine (a stand-in builder, the real worker) as issue 40 has
// them: each application gets its share of the worker (--local-max-concurrent-requests,
// --local-max-queued-requests, passed in every load), past it 429 with Retry-After for it
// alone; and its port answers only a Host naming loopback, so a DNS-rebinding page cannot call
// it (worker/src/host.rs).
import fc from 'fast-check'
import t from 'tap'
import { until } from '../helpers/control.js'
import type { Deployment } from '../helpers/local-apps.js'
import { deployed, holdOnlyTurn, localControl } from '../helpers/local-apps.js'
import { rawRequest } from '../helpers/raw-http.js'

t.setTimeout(180_000)

t.test('one request holds the only turn: the next gets 429 with Retry-After, another application 200', async (t) => {
  const control = await localControl(t, ['--local-max-concurrent-requests', '1', '--local-max-queued-requests', '0'])
  const busy = await deployed(control, 'busy')
  const quiet = await deployed(control, 'quiet')
  const { held, retryAfter } = await holdOnlyTurn(busy)
  t.equal(retryAfter, '1', 'Retry-After')
  t.equal((await fetch(quiet)).status, 200, 'the other application is answered')
  t.match(await held.finish(), /^HTTP\/1\.1 200 [^]*bytes 10$/)
  await until(async () => (await fetch(busy)).status === 200, 20_000, 'the turn free again')
})

t.test("an application's own concurrency: 1 running, none queued, is its alone", async (t) => {
  // The platform's defaults (100 and 100) for the other; the busy one chose a smaller share.
  const control = await localControl(t)
  const busy = await deployed(control, 'busy', { concurrency: { maxRunning: 1, maxQueued: 0 } })
  const quiet = await deployed(control, 'quiet')
  const { held } = await holdOnlyTurn(busy)
  const others = await Promise.all([fetch(quiet), fetch(quiet), fetch(quiet)])
  t.same(
    others.map((answer) => answer.status),
    [200, 200, 200],
    'the other application answers requests at once',
  )
  t.match(await held.finish(), /^HTTP\/1\.1 200 [^]*bytes 10$/)

  // A PATCH of a deployed application reloads it with its new share, as a resources change does.
  const apps = (await control.call('GET', '/applications')).body as Array<{ id: string; name: string }>
  const quietId = apps.find((app) => app.name === 'quiet')?.id ?? ''
  const patched = await control.call('PATCH', `/applications/${quietId}`, {
    json: { concurrency: { maxRunning: 1, maxQueued: 0 } },
  })
  t.match(patched.body, { deployment: { message: /re-applied with the new settings/ } })
  await until(
    async () =>
      ((await control.call('GET', `/applications/${quietId}`)).body as { deployment: Deployment }).deployment.ready,
    60_000,
    'the new version loaded',
  )
  const { held: heldQuiet } = await holdOnlyTurn(quiet)
  t.match(await heldQuiet.finish(), /^HTTP\/1\.1 200 [^]*bytes 10$/)
})

t.test("an application's port answers only a Host naming loopback", async (t) => {
  const control = await localControl(t)
  const app = await deployed(control, 'app')
  const port = Number(app.port)
  const status = async (host: string): Promise<number | null> =>
    (await rawRequest(port, `GET / HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`)).status
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `app.localhost:${port}`])
    t.equal(await status(host), 200, host)
  t.equal(await status('evil.example'), 400)
  t.equal(await status(`evil.example:${port}`), 400)

  // The oracle, apart from the worker's code: a loopback name (RFC 6761's *.localhost too),
  // alone or with this port.
  const names = ['localhost', '127.0.0.1', '[::1]', 'app.localhost']
  const oracle = (host: string): boolean => {
    const [, name = '', given] = /^(.*?)(?::(\d+))?$/.exec(host.toLowerCase()) ?? []
    const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(name) || /^([a-z0-9-]{1,63}\.)+localhost$/.test(name)
    return loopback && (given === undefined || (given.length <= 5 && Number(given) === port))
  }
  const hosts = fc.oneof(
    fc
      .tuple(
        fc.constantFrom(...names, ...names.map((name) => name.toUpperCase())),
        fc.constantFrom('', `:${port}`, `:${port + 1}`, ':', ':0'),
      )
      .map(([name, suffix]) => `${name}${suffix}`),
    fc
      .tuple(
        fc.constantFrom('', 'user@', 'evil.', 'x', '['),
        fc.constantFrom(...names),
        fc.constantFrom('', '.evil.example', '@evil', 'x', '.', `:${port}:${port}`),
      )
      .map(([before, name, after]) => `${before}${name}${after}`),
    fc.domain(),
  )
  await fc.assert(
    fc.asyncProperty(hosts, async (host) =>
      oracle(host) ? (await status(host)) === 200 : (await status(host)) === 400,
    ),
    { numRuns: 100 },
  )
})
