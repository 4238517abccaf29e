// The `relay` command misused, and pointed at relays it cannot use: each case is the exit code
// the help text promises (2 usage error, 1 failure) with the one line that says why. Usage
// errors never need the relay: they are found before it is asked anything (a --server on a
// port nothing listens on proves it). The failures meet a refused connection or a small
// node:http server playing a relay that wants a login or answers 500.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { collect, runCli } from '../helpers/client-cli.js'
import { freePort } from '../helpers/ports.js'
import { startTestRelay } from '../helpers/relay.js'

t.setTimeout(120_000)

async function relayCli(t: Test, args: string[], env: Record<string, string> = {}) {
  const cli = runCli(t, args, env)
  cli.child.stdin.end()
  const [out, code] = await Promise.all([collect(cli.child.stdout), cli.exited])
  return { out: out.toString(), err: cli.stderr(), code }
}

async function configHome(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'relay-cli-usage-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

t.test('usage errors exit 2 with the reason and where the usage is', async (t) => {
  const nobody = `http://127.0.0.1:${await freePort()}`
  const home = await configHome(t)
  const cases: Array<[string[], string]> = [
    [['session', 'get', '--server', nobody], 'relay session: relay session get needs a session id'],
    [['session', 'delete', '--server', nobody], 'relay session: relay session delete needs a session id'],
    [['session', 'list', 'abc', '--server', nobody], 'relay session: unexpected argument: abc'],
    [['session', 'get', 'a', 'b', '--server', nobody], 'relay session: unexpected argument: b'],
    [['session', '--server', nobody], 'relay session: relay session needs create, list, get or delete'],
    [['session', 'list', '--limit', '0', '--server', nobody], 'relay session: --limit: a positive integer'],
    [['session', 'list', '--limit', 'ten', '--server', nobody], 'relay session: --limit: a positive integer'],
    [['session', 'list', '--server', 'not a url'], 'relay session: --server: not a URL: not a url'],
    [['pair', 'now', '--server', nobody], 'relay pair: unexpected argument: now'],
    [['pair'], 'relay pair: no relay given: pass --server URL or set RELAY_SERVER'],
    [['login'], 'relay login: no relay given: pass --server URL or set RELAY_SERVER'],
    [
      ['attach', 'http://127.0.0.1/relay/x', '--token=t'],
      'relay attach: not a ws:// or wss:// URL: http://127.0.0.1/relay/x',
    ],
    [
      ['attach', 'ws://127.0.0.1/relay/x', 'ws://127.0.0.1/relay/y'],
      'relay attach: relay attach needs one URL (ws(s)://host/relay/ID)',
    ],
    [
      ['attach', 'ws://127.0.0.1/relay/x', '--token=t', '--token-file', '/t'],
      'relay attach: give --token or --token-file, not both',
    ],
    [
      ['attach', 'ws://127.0.0.1/relay/x'],
      'relay attach: no slot token: pass --token, --token-file or set RELAY_TOKEN',
    ],
  ]
  for (const [args, reason] of cases) {
    const run = await relayCli(t, args, { XDG_CONFIG_HOME: home })
    t.equal(run.code, 2, args.join(' '))
    const command = args[0] as string
    t.equal(run.err, `${reason}\n(relay ${command} --help for usage)\n`, args.join(' '))
  }
})

t.test('an unknown flag is a usage error too', async (t) => {
  for (const command of ['session', 'login', 'attach']) {
    const run = await relayCli(t, [command, '--bogus'])
    t.equal(run.code, 2, command)
    t.match(run.err, new RegExp(`^relay ${command}: Unknown option '--bogus'`), command)
  }
})

t.test('no command prints the help and exits 2; an unknown one says so', async (t) => {
  const none = await relayCli(t, [])
  t.equal(none.code, 2)
  t.match(none.out, /^relay: the session relay's command-line client\n/)
  const unknown = await relayCli(t, ['frobnicate'])
  t.equal(unknown.code, 2)
  t.match(unknown.err, /^relay: unknown command frobnicate\nrelay: the session relay's command-line client\n/)
  const help = await relayCli(t, ['help'])
  t.equal(help.code, 0, '"relay help" is asking for it')
})

t.test('failures exit 1 with the reason', async (t) => {
  const home = await configHome(t)

  t.test('a token file that cannot be read', async (t) => {
    const run = await relayCli(t, ['attach', 'ws://127.0.0.1/relay/x', '--token-file', join(home, 'missing')])
    t.equal(run.code, 1)
    t.equal(run.err, `relay attach: cannot read --token-file ${join(home, 'missing')}: ENOENT\n`)
  })

  t.test('a relay that is not there', async (t) => {
    const nobody = `http://127.0.0.1:${await freePort()}`
    const run = await relayCli(t, ['session', 'list', '--server', nobody], { XDG_CONFIG_HOME: home })
    t.equal(run.code, 1)
    t.equal(run.err, `relay session: cannot reach ${nobody}/.well-known/relay-config\n`)
  })

  // A relay with auth: its discovery document names an issuer; nothing is stored for it.
  async function fakeRelay(t: Test, status: number, body: string): Promise<string> {
    const server = http.createServer((_request, response) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(body)
    })
    t.teardown(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        }),
    )
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  }

  t.test('a relay that wants a login nobody made', async (t) => {
    const relay = await fakeRelay(
      t,
      200,
      JSON.stringify({ issuer: 'https://id.example.com', client_id_hint: 'relay-cli' }),
    )
    for (const args of [['session', 'create'], ['pair']]) {
      const run = await relayCli(t, [...args, '--server', relay], { XDG_CONFIG_HOME: home })
      t.equal(run.code, 1, args.join(' '))
      t.equal(
        run.err,
        `relay ${args[0] as string}: not logged in to ${relay}: run "relay login --server ${relay}"\n`,
        args.join(' '),
      )
    }
  })

  t.test('a relay whose discovery fails', async (t) => {
    const relay = await fakeRelay(t, 500, '{"error":"internal"}')
    const run = await relayCli(t, ['session', 'list', '--server', relay], { XDG_CONFIG_HOME: home })
    t.equal(run.code, 1)
    t.equal(run.err, 'relay session: discovery: 500 internal\n')
  })
})

t.test('every session command shape against a relay with auth disabled', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const env = { XDG_CONFIG_HOME: await configHome(t) }
  const created = await relayCli(t, ['session', 'create', '--json', '--server', relay.http], env)
  t.equal(created.code, 0, created.err)
  const { id } = JSON.parse(created.out) as { id: string }
  const page = await relayCli(t, ['session', 'list', '--limit', '1', '--json', '--server', relay.http], env)
  t.same(
    (JSON.parse(page.out) as { sessions: Array<{ id: string }> }).sessions.map((session) => session.id),
    [id],
  )
  const table = await relayCli(t, ['session', 'list', '--limit', '1', '--server', relay.http], env)
  t.match(
    table.out,
    new RegExp(`^ID +STATE +PEERS +BYTES_IN +BYTES_OUT +EXPIRES_AT\\n${id} +pending +-- +0 +0 +\\S+\\n$`),
  )
  const all = await relayCli(t, ['session', 'list', '--json', '--server', relay.http], env)
  t.same(
    (JSON.parse(all.out) as { sessions: Array<{ id: string }> }).sessions.map((session) => session.id),
    [id],
  )
  const one = await relayCli(t, ['session', 'get', id, '--server', relay.http], env)
  t.match(one.out, new RegExp(`^ID .*\\n${id} +pending `))
  const oneJson = await relayCli(t, ['session', 'get', id, '--json', '--server', relay.http], env)
  t.equal((JSON.parse(oneJson.out) as { id: string }).id, id)
  const deleted = await relayCli(t, ['session', 'delete', id, '--json', '--server', relay.http], env)
  t.same([deleted.code, JSON.parse(deleted.out)], [0, { deleted: id }])
  const missing = await relayCli(t, ['session', 'get', 'no-such-session', '--server', relay.http], env)
  t.equal(missing.code, 1)
  t.equal(missing.err, 'relay session: get session no-such-session: 404 session not found\n')
  // One session id in 64 begins with a dash (16 random bytes in base64url): it is an id, not
  // an option, wherever it stands, and a slot token that does is a token.
  const dashed = '-Hq2_x9-aZ0bY1cX2dW3eV'
  for (const args of [
    ['session', 'get', dashed, '--server', relay.http],
    ['session', '--server', relay.http, 'get', dashed, '--json'],
    ['session', 'delete', dashed, '--server', relay.http],
  ]) {
    const answer = await relayCli(t, args, env)
    t.equal(answer.code, 1, answer.err)
    t.match(answer.err, new RegExp(`^relay session: (get|delete) session ${dashed}: 404 session not found\n$`))
  }
  const attached = await relayCli(
    t,
    ['attach', '--token', '-tTq2_x9-aZ0bY1cX2dW3eV'.slice(0, 22), `${relay.ws}/relay/${dashed}`],
    env,
  )
  t.equal(attached.code, 1, attached.err)
  t.notMatch(attached.err, /usage|ambiguous|Unknown option/)
})
