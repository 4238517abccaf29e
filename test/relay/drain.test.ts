// The compiled relay draining on SIGTERM (docs/relay.md, "Shutdown and drain"): not ready, no
// new sessions, the held ones served (reattaches too) until none is left or --drain-timeout;
// a second SIGTERM ends it at once.
import { fileURLToPath } from 'node:url'
import t from 'tap'
import type { Test } from 'tap'
import { attach, until } from '../helpers/relay.js'
import type { Created } from '../helpers/relay.js'
import { processRunner } from '../helpers/process.js'
import type { RunningProcess } from '../helpers/process.js'

const mainJs = fileURLToPath(new URL('../../relay/dist/main.js', import.meta.url))
const { start } = processRunner({ mainJs, ownEnv: /^(RELAY_|UWS_)/, listening: 'relay listening' })
const noAuth = ['--no-auth', '--addr', '127.0.0.1:0']

// Four relay processes; a start is 1-2 s, more on a loaded machine.
t.setTimeout(180_000)

async function createAt(port: number): Promise<Created> {
  const response = await fetch(`http://127.0.0.1:${port}/admin/sessions`, { method: 'POST' })
  if (response.status !== 201) throw new Error(`create answered ${response.status}: ${await response.text()}`)
  return (await response.json()) as Created
}

async function openPair(port: number) {
  const session = await createAt(port)
  const url = `ws://127.0.0.1:${port}/relay/${session.id}`
  const initiator = await attach(url, { token: session.initiator_token })
  const responder = await attach(url, { token: session.responder_token })
  return { session, url, initiator, responder }
}

/** SIGTERM, then wait for the line that says the drain began (the signal is handled in the child's own time). */
async function sigterm(relay: RunningProcess): Promise<void> {
  const before = relay.logs.filter((line) => line.msg === 'draining').length
  relay.child.kill('SIGTERM')
  await until(
    () => relay.logs.filter((line) => line.msg === 'draining').length > before,
    60_000,
    'the "draining" log line',
  )
}

async function checkRefusesNewSessions(t: Test, port: number): Promise<void> {
  const ready = await fetch(`http://127.0.0.1:${port}/readyz`)
  t.equal(ready.status, 503, '/readyz answers 503')
  t.equal(await ready.text(), 'draining')
  t.equal(
    (await fetch(`http://127.0.0.1:${port}/healthz`)).status,
    200,
    '/healthz still 200: the pod is alive, not to be restarted',
  )
  const create = await fetch(`http://127.0.0.1:${port}/admin/sessions`, { method: 'POST' })
  t.equal(create.status, 503, 'a create answers 503')
  t.equal(create.headers.get('retry-after'), '5', 'with Retry-After')
  t.match(await create.json(), { error: /draining/ })
}

t.test('a session spanning SIGTERM goes on, reattach included; the relay exits 0 once it ends', async (t) => {
  const relay = await start(t, noAuth)
  t.equal((await fetch(`http://127.0.0.1:${relay.port}/readyz`)).status, 200, '/readyz 200 before')
  const { session, url, initiator, responder } = await openPair(relay.port)
  await sigterm(relay)
  await checkRefusesNewSessions(t, relay.port)
  const view = await fetch(`http://127.0.0.1:${relay.port}/admin/sessions/${session.id}`)
  t.equal(view.status, 200, 'the admin API still serves the sessions held')

  initiator.socket.send('during the drain')
  t.equal((await responder.receive(1))[0]!.data.toString(), 'during the drain', 'the session still forwards')
  // A drop and a reattach within peer-wait: what a client on a flaky network does meanwhile.
  initiator.socket.terminate()
  await until(
    async () => {
      const body = (await (await fetch(`http://127.0.0.1:${relay.port}/admin/sessions/${session.id}`)).json()) as {
        initiator_connected: boolean
      }
      return !body.initiator_connected
    },
    60_000,
    'the relay to notice the drop',
  )
  const again = await attach(url, { token: session.initiator_token })
  again.socket.send('after the reattach')
  t.equal(
    (await responder.receive(2))[1]!.data.toString(),
    'after the reattach',
    'a reattach during the drain is served',
  )

  again.socket.close(1000, 'done')
  t.same(await responder.closed, { code: 1000, reason: 'done' }, 'the session ends as its peers end it, not with 1001')
  t.same(await relay.exited, { code: 0, signal: null }, 'exit 0 once no session is left')
  t.ok(
    relay.logs.some((line) => line.msg === 'drained'),
    'it says it drained',
  )
})

t.test('a drain that reaches --drain-timeout closes what is left with 1001 and exits 0', async (t) => {
  const relay = await start(t, [...noAuth, '--drain-timeout', '1s'])
  const { initiator, responder } = await openPair(relay.port)
  await sigterm(relay)
  const closes = await Promise.all([initiator.closed, responder.closed])
  t.same(
    closes,
    [
      { code: 1001, reason: 'relay shutting down' },
      { code: 1001, reason: 'relay shutting down' },
    ],
    'both peers get 1001',
  )
  t.same(await relay.exited, { code: 0, signal: null }, 'exit 0')
  t.ok(
    relay.logs.some((line) => line.msg === 'drain timed out'),
    'it says the drain timed out',
  )
})

t.test('a second SIGTERM during the drain stops at once: 1001, exit 0', async (t) => {
  const relay = await start(t, noAuth) // the default drain timeout, 10m: only the second signal ends it here
  const { initiator, responder } = await openPair(relay.port)
  await sigterm(relay)
  relay.child.kill('SIGTERM')
  const closes = await Promise.all([initiator.closed, responder.closed])
  t.same(
    closes.map((close) => close.code),
    [1001, 1001],
    'both peers get 1001',
  )
  t.same(await relay.exited, { code: 0, signal: null }, 'exit 0')
  t.ok(
    relay.logs.some((line) => line.msg === 'shutting down' && line.signal === 'SIGTERM'),
    'the second signal is logged as the stop',
  )
})

t.test('a relay holding no session exits at once on SIGTERM', async (t) => {
  const relay = await start(t, noAuth)
  relay.child.kill('SIGTERM')
  t.same(await relay.exited, { code: 0, signal: null }, 'exit 0')
  t.ok(
    relay.logs.some((line) => line.msg === 'drained'),
    'drained, with nothing to wait for',
  )
})
