// The compiled relay as an operator runs it: `node relay/dist/main.js`. Startup errors,
// logging, env and flag configuration,
// the listen address forms and graceful shutdown on SIGTERM / SIGINT.
import { connect, createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { attach } from '../helpers/relay.js'
import type { Created } from '../helpers/relay.js'
import { freePort } from '../helpers/ports.js'
import { lines, processRunner } from '../helpers/process.js'
import { settings } from '@session-relay/relay/config'

const mainJs = fileURLToPath(new URL('../../relay/dist/main.js', import.meta.url))
const packageJson = fileURLToPath(new URL('../../package.json', import.meta.url))
const noAuth = ['--no-auth', '--addr', '127.0.0.1:0']
const { runToExit, start: startRelayProcess } = processRunner({
  mainJs,
  ownEnv: /^(RELAY_|UWS_)/,
  listening: 'relay listening',
})

// 26 relay processes one after another: 28 s measured at a load average of 14 on two cores.
t.setTimeout(300_000)

t.test('startup errors: exit code 2 and exactly one line on stderr, nothing on stdout', async (t) => {
  const cases: Array<[string, string[], Record<string, string>, RegExp]> = [
    ['an unknown flag', [...noAuth, '--bogus'], {}, /unknown flag --bogus/],
    ['a duration that does not parse', [...noAuth, '--session-ttl', 'abc'], {}, /"abc".*--session-ttl/],
    ['an address that does not parse', ['--no-auth', '--addr', 'nope'], {}, /"nope".*--addr/],
    ['a zero frame size', [...noAuth, '--max-frame-size', '0'], {}, /"0".*--max-frame-size/],
    ['a zero duration flag', [...noAuth, '--peer-wait', '0s'], {}, /"0s".*--peer-wait.*greater than 0/],
    [
      'a negative duration in the environment',
      noAuth,
      { RELAY_REAP_INTERVAL: '-1s' },
      /"-1s".*RELAY_REAP_INTERVAL.*greater than 0/,
    ],
    ['no issuer and no --no-auth', ['--addr', '127.0.0.1:0'], {}, /--oidc-issuer.*required unless --no-auth/],
    [
      'a bad flag over a valid env value',
      [...noAuth, '--session-ttl', '0s'],
      { RELAY_SESSION_TTL: '1h' },
      /"0s".*--session-ttl/,
    ],
    [
      'a bad flag over a valid env address',
      ['--no-auth', '--addr', '127.0.0.1:70000'],
      { RELAY_ADDR: '127.0.0.1:0' },
      /"127\.0\.0\.1:70000".*--addr/,
    ],
    [
      'a bad env value when no flag overrides it',
      noAuth,
      { RELAY_MAX_FRAME_SIZE: 'big' },
      /"big".*RELAY_MAX_FRAME_SIZE/,
    ],
    [
      'TLS files that are readable but not PEM',
      [...noAuth, '--tls-cert', packageJson, '--tls-key', packageJson],
      {},
      /not a valid PEM certificate and key/,
    ],
    [
      'a TLS certificate that cannot be read',
      [...noAuth, '--tls-cert', '/nonexistent/cert.pem', '--tls-key', '/nonexistent/key.pem'],
      {},
      /cannot read --tls-cert file \/nonexistent\/cert\.pem/,
    ],
  ]
  // One child at a time: twelve Node starts at once on two busy cores is what made the exit
  // waits time out under load; one at a time, each wait times one start.
  for (const [what, args, env, message] of cases) {
    const run = await runToExit(t, args, env)
    t.equal(run.code, 2, `${what}: exit code 2`)
    t.equal(run.stdout, '', `${what}: nothing on stdout`)
    t.equal(lines(run.stderr).length, 1, `${what}: exactly one line on stderr`)
    t.match(run.stderr, message, `${what}: the line says what is wrong`)
    t.match(run.stderr, /^relay: /, `${what}: the line names the program`)
  }
})

t.test('--help: usage from the settings table on stdout, exit 0, nothing else', async (t) => {
  // Whatever else is on the line, and before any setting is read: a broken setting does not hide the help.
  for (const args of [['--help'], ['--bogus', '--help'], ['--addr', 'nope', '--help']]) {
    const run = await runToExit(t, args, { RELAY_SESSION_TTL: 'abc' })
    t.equal(run.code, 0, `${args.join(' ')}: exit code 0`)
    t.equal(run.stderr, '', `${args.join(' ')}: nothing on stderr`)
    t.match(run.stdout, /^Usage: relay /, `${args.join(' ')}: a synopsis first`)
    for (const row of settings) {
      const shown = row.default === '' ? '' : ` (default ${row.default})`
      t.ok(
        run.stdout.includes(`  ${row.flag}, ${row.env}${shown}\n      ${row.help}\n`),
        `${row.flag}: flag, env var, default and help`,
      )
    }
  }
})

t.test('--no-auth on port 0: JSON logs, an auth-disabled warning, the port it got, and /healthz', async (t) => {
  const relay = await startRelayProcess(t, noAuth)
  const warning = relay.logs.find((line) => line.level === 40 && /auth is disabled/.test(String(line.msg)))
  t.ok(warning, 'a level-40 warning that auth is disabled')
  const listening = relay.logs.find((line) => line.msg === 'relay listening')
  t.match(listening, { level: 30, port: relay.port, tls: false }, 'an info line "relay listening" with the port')
  t.not(relay.port, 0, 'the log carries the port the OS picked, not 0')
  t.equal(relay.stderr(), '', 'nothing on stderr')
  const health = await fetch(`http://127.0.0.1:${relay.port}/healthz`)
  t.equal(health.status, 200)
  t.equal(await health.text(), 'ok')
})

t.test('a port another relay holds: the second one exits 1 instead of sharing it, and says why', async (t) => {
  // uWS would bind with SO_REUSEPORT and split the connections between the two processes.
  const first = await startRelayProcess(t, noAuth)
  const second = await runToExit(t, ['--no-auth', '--addr', `127.0.0.1:${first.port}`])
  t.equal(second.code, 1)
  t.equal(lines(second.stderr).length, 1, 'one line on stderr')
  t.equal(
    second.stderr,
    `relay: cannot listen on 127.0.0.1:${first.port}: EADDRINUSE (address already in use)\n`,
    'the line names the address, the port and the reason',
  )
  t.equal((await fetch(`http://127.0.0.1:${first.port}/healthz`)).status, 200, 'the first keeps serving')
})

t.test('a port another program holds: the same line', async (t) => {
  const holder = createServer()
  t.teardown(() => {
    holder.close()
  })
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
  const port = (holder.address() as AddressInfo).port
  const run = await runToExit(t, ['--no-auth', '--addr', `127.0.0.1:${port}`])
  t.equal(run.code, 1)
  t.equal(run.stderr, `relay: cannot listen on 127.0.0.1:${port}: EADDRINUSE (address already in use)\n`)
})

t.test('configuration from the environment', async (t) => {
  t.test('RELAY_NO_AUTH and RELAY_ADDR alone start the relay', async (t) => {
    const relay = await startRelayProcess(t, [], { RELAY_NO_AUTH: 'true', RELAY_ADDR: '127.0.0.1:0' })
    t.ok(
      relay.logs.some((line) => line.level === 40 && /auth is disabled/.test(String(line.msg))),
      'auth-disabled warning',
    )
    t.equal((await fetch(`http://127.0.0.1:${relay.port}/healthz`)).status, 200)
  })

  t.test('--addr wins over RELAY_ADDR', async (t) => {
    const wanted = await freePort()
    const relay = await startRelayProcess(t, ['--no-auth', '--addr', `127.0.0.1:${wanted}`], {
      RELAY_ADDR: '127.0.0.1:0',
    })
    t.equal(relay.port, wanted, 'it listens on the port the flag names')
    t.equal((await fetch(`http://127.0.0.1:${wanted}/healthz`)).status, 200)
  })

  t.test('a bad env value is never parsed when a good flag overrides it', async (t) => {
    const relay = await startRelayProcess(t, [...noAuth, '--session-ttl', '10m'], { RELAY_SESSION_TTL: 'abc' })
    const session = await createSessionAt(relay.port)
    const lifetime = Date.parse(session.expires_at) - Date.parse(session.created_at)
    t.equal(lifetime, 10 * 60_000, 'the session lives as long as the flag says')
  })
})

t.test('listens on [::1]:0 when IPv6 loopback is available', async (t) => {
  if (!(await ipv6LoopbackWorks())) {
    t.pass('listen on [::1]:0', { skip: 'this machine has no IPv6 loopback (::1 cannot be bound)' })
    return
  }
  const relay = await startRelayProcess(t, ['--no-auth', '--addr', '[::1]:0'])
  t.match(
    relay.logs.find((line) => line.msg === 'relay listening'),
    { host: '::1', port: relay.port },
    'it logs host ::1 and the port',
  )
  const health = await fetch(`http://[::1]:${relay.port}/healthz`)
  t.equal(health.status, 200, '/healthz answers on [::1]')
  t.equal(await health.text(), 'ok')
  t.equal(await connectError('127.0.0.1', relay.port), 'ECONNREFUSED', 'not listening on IPv4')
})

// SIGTERM drains instead (test/relay/drain.test.ts); SIGINT, a person at a terminal, stops at once.
for (const signal of ['SIGINT'] as const) {
  t.test(`graceful shutdown on ${signal}: peers get 1001, exit code 0, no new connections`, async (t) => {
    const relay = await startRelayProcess(t, noAuth)
    const session = await createSessionAt(relay.port)
    const url = `ws://127.0.0.1:${relay.port}/relay/${session.id}`
    const initiator = await attach(url, { token: session.initiator_token })
    const responder = await attach(url, { token: session.responder_token })
    initiator.socket.send('before shutdown')
    t.equal((await responder.receive(1))[0]!.data.toString(), 'before shutdown', 'the session works')

    relay.child.kill(signal)
    const closes = await Promise.all([initiator.closed, responder.closed])
    t.same(
      closes,
      [
        { code: 1001, reason: 'relay shutting down' },
        { code: 1001, reason: 'relay shutting down' },
      ],
      'both peers get 1001 "relay shutting down"',
    )
    t.equal(await connectError('127.0.0.1', relay.port), 'ECONNREFUSED', 'refused as soon as the peers are told')

    const exit = await relay.exited
    t.same(exit, { code: 0, signal: null }, 'exit code 0')
    t.match(
      relay.logs.find((line) => line.msg === 'shutting down'),
      { signal },
      'it logs the signal',
    )
    // Not the hard stop (common/src/lifecycle.ts, 5 s), which exits 0 too but before this line:
    // that is the contract's bound, where a stopwatch here would measure the machine's load.
    t.ok(
      relay.logs.some((line) => line.msg === 'relay stopped'),
      'the graceful path ran to the end, before the hard stop',
    )
    t.equal(await connectError('127.0.0.1', relay.port), 'ECONNREFUSED', 'refused after exit')
  })
}

// ---------------------------------------------------------------------------------------------

async function createSessionAt(port: number): Promise<Created> {
  const response = await fetch(`http://127.0.0.1:${port}/admin/sessions`, { method: 'POST' })
  if (response.status !== 201) throw new Error(`create answered ${response.status}: ${await response.text()}`)
  return (await response.json()) as Created
}

/** The error code of a TCP connection attempt, or 'connected'. */
function connectError(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port })
    socket.once('connect', () => {
      socket.destroy()
      resolve('connected')
    })
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
  })
}

function ipv6LoopbackWorks(): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(0, '::1', () => server.close(() => resolve(true)))
  })
}
