// relay login, relay session and relay pair as processes: tokens stored 0600 and refreshed
// without asking, a table or JSON, auth-disabled relays without a login.
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, stat, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { collect, runCli } from '../helpers/client-cli.js'
import { actAsUser } from '../helpers/device-user.js'
import { startTestRelay, until } from '../helpers/relay.js'
import { stopChild } from '../helpers/stop-child.js'

async function relayCli(t: Test, args: string[], env: Record<string, string>) {
  const cli = runCli(t, args, env)
  cli.child.stdin.end()
  const [out, code] = await Promise.all([collect(cli.child.stdout), cli.exited])
  return { out: out.toString(), err: cli.stderr(), code }
}

// A command's JSON answer; when it failed, the failure says why (its exit code and stderr).
function jsonOf(t: Test, result: { out: string; err: string; code: number | null }): unknown {
  t.equal(result.code, 0, `exit code 0; stderr: ${result.err}`)
  return JSON.parse(result.out)
}

t.test(
  'login with the device flow, then session commands with the stored token, refreshed when it expires',
  async (t) => {
    const idp = await startOidcProvider()
    t.teardown(() => idp.close())
    const relay = await startTestRelay(t, [
      '--oidc-issuer',
      idp.issuer,
      '--oidc-audience',
      'https://relay.test',
      '--oidc-client-id',
      idp.deviceClientId,
      '--log-level',
      'warn',
    ])
    const config = await mkdtemp(join(tmpdir(), 'relay-cli-'))
    const env = { XDG_CONFIG_HOME: config, RELAY_SERVER: relay.http }

    const before = await relayCli(t, ['session', 'list'], env)
    t.equal(before.code, 1)
    t.match(before.err, /not logged in/)

    const login = runCli(t, ['login'], env)
    login.child.stdin.end()
    await until(() => /enter the code (\S+)/.test(login.stderr()), 10_000, 'the prompt')
    const uri = /open (\S+)/.exec(login.stderr())?.[1] as string
    const code = /enter the code (\S+)/.exec(login.stderr())?.[1] as string
    await actAsUser(uri, code)
    t.equal(await login.exited, 0, login.stderr())
    const file = join(config, 'session-relay', 'tokens.json')
    t.equal((await stat(file)).mode & 0o777, 0o600, 'tokens file readable by its owner only')

    const created = await relayCli(t, ['session', 'create', '--json'], env)
    const id = (jsonOf(t, created) as { id: string }).id
    const limited = await relayCli(
      t,
      ['session', 'create', '--json', '--max-bytes', '4096', '--bytes-per-second', '1000', '--ttl-seconds', '60'],
      env,
    )
    const limitedId = (jsonOf(t, limited) as { id: string }).id
    t.match(
      jsonOf(t, await relayCli(t, ['session', 'get', limitedId, '--json'], env)),
      { limits: { max_bytes: 4096, bytes_per_second: 1000, ttl_seconds: 60 } },
      'session create --max-bytes --bytes-per-second --ttl-seconds',
    )
    t.equal((await relayCli(t, ['session', 'create', '--max-bytes', '0'], env)).code, 2, '--max-bytes 0: a usage error')

    // the stored access token has expired: the next command refreshes it silently
    const stored = JSON.parse(await readFile(file, 'utf8')) as Record<
      string,
      { access_token: string; expires_at: number }
    >
    const entry = Object.values(stored)[0] as { access_token: string; expires_at: number }
    const oldAccess = entry.access_token
    entry.expires_at = Date.now() - 1000
    await writeFile(file, JSON.stringify(stored))
    const got = await relayCli(t, ['session', 'get', id], env)
    t.equal(got.code, 0, got.err)
    t.match(got.out, new RegExp(`^ID\\s+STATE[^\\n]*\\n${id}\\s+pending`))
    const after = Object.values(JSON.parse(await readFile(file, 'utf8')) as Record<string, { access_token: string }>)[0]
    t.not(after?.access_token, oldAccess, 'the refreshed token was stored')
    t.equal((await stat(file)).mode & 0o777, 0o600)

    const listed = await relayCli(t, ['session', 'list', '--json'], env)
    t.match(jsonOf(t, listed), { sessions: [{ id }] })
    t.equal((await relayCli(t, ['session', 'delete', id], env)).code, 0)
    const missing = await relayCli(t, ['session', 'get', id], env)
    t.equal(missing.code, 1)
    t.match(missing.err, /404 session not found|404/)
  },
)

t.test('against a relay with auth disabled: no login; pair prints two attach commands that work', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const env = { XDG_CONFIG_HOME: await mkdtemp(join(tmpdir(), 'relay-cli-')) }
  const loginResult = await relayCli(t, ['login', '--server', relay.http], env)
  t.equal(loginResult.code, 0)
  t.match(loginResult.err, /auth disabled/)
  // Without this checkout's relay on PATH the commands name Node and the script by absolute
  // path: run as printed, by a shell in another directory (npx relay fails there).
  const pair = await relayCli(t, ['pair', '--server', relay.http], { ...env, PATH: '/usr/bin:/bin' })
  t.equal(pair.code, 0, pair.err)
  const commands = pair.out.split('\n').filter((line) => line.startsWith('RELAY_TOKEN='))
  t.equal(commands.length, 2)
  t.notMatch(pair.out, 'npx')
  t.ok(
    commands.every((line) => line.includes(` ${process.execPath} /`)),
    pair.out,
  )
  const elsewhere = await mkdtemp(join(tmpdir(), 'relay-elsewhere-'))
  const shell = (line: string) => {
    const child = spawn('sh', ['-c', line], {
      cwd: elsewhere,
      env: { PATH: '/usr/bin:/bin' },
      stdio: ['pipe', 'pipe', 'inherit'],
    })
    t.teardown(() => stopChild(child))
    return { child, exited: new Promise<number | null>((resolve) => child.once('close', resolve)) }
  }
  const a = shell(commands[0] as string)
  const b = shell(commands[1] as string)
  a.child.stdin.end('from a')
  b.child.stdin.end('from b')
  const [outA, outB, codeA, codeB] = await Promise.all([
    collect(a.child.stdout),
    collect(b.child.stdout),
    a.exited,
    b.exited,
  ])
  t.equal(outA.toString(), 'from b')
  t.equal(outB.toString(), 'from a')
  t.same([codeA, codeB], [0, 0])
  // Installed (npm install -g, or npm's .bin on PATH): the bare name.
  const bin = join(elsewhere, 'bin')
  await mkdir(bin)
  await symlink(new URL('../../client/bin/relay.js', import.meta.url).pathname, join(bin, 'relay'))
  const installed = await relayCli(t, ['pair', '--server', relay.http], { ...env, PATH: `/usr/bin:${bin}` })
  t.match(installed.out, /^RELAY_TOKEN=\S+ relay attach ws:\/\/\S+$/m)
  const listed = await relayCli(t, ['session', 'list', '--server', relay.http], env)
  t.match(listed.out, /closed/)
  const usage = await relayCli(t, ['session', 'frobnicate', '--server', relay.http], env)
  t.equal(usage.code, 2)
  const noServer = await relayCli(t, ['session', 'list'], env)
  t.equal(noServer.code, 2)
  t.match(noServer.err, /RELAY_SERVER/)
})
