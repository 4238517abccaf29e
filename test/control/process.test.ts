// The compiled control plane as an operator runs it: `node dist/control/src/main.js`. Startup
// errors and their exit codes, configuration from the environment, JSON logs, the data
// directory, the container health check, and graceful shutdown on SIGTERM / SIGINT.
import { spawn, spawnSync } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import type { Test } from 'tap'
import { call, ENGINES, freshStore } from '../helpers/control.js'
import { lines, processRunner } from '../helpers/process.js'

const mainJs = fileURLToPath(new URL('../../dist/control/src/main.js', import.meta.url))
const healthcheckJs = fileURLToPath(new URL('../../dist/control/src/healthcheck.js', import.meta.url))
const relayHealthcheckJs = fileURLToPath(new URL('../../dist/relay/src/healthcheck.js', import.meta.url))
const { childEnv, runToExit, start: startProcess } = processRunner({
  mainJs, ownEnv: /^PLATFORM_/, listening: 'control plane listening', startTimeoutMs: 60_000, exitTimeoutMs: 30_000,
})

function scratchDir (t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'control-process-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

t.test('startup errors: exit code 2 and exactly one line on stderr, nothing on stdout', async (t) => {
  const dir = scratchDir(t)
  const aFile = join(dir, 'a-file')
  writeFileSync(aFile, 'not a directory')
  const skip = ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0', '--data-dir', join(dir, 'data')]
  const cases: Array<[string, string[], Record<string, string>, RegExp]> = [
    ['an unknown flag', [...skip, '--bogus'], {}, /unknown flag --bogus/],
    ['no issuer and no skip-auth', ['--addr', '127.0.0.1:0'], {}, /--oidc-issuer \(PLATFORM_OIDC_ISSUER\) is required unless --dev-insecure-skip-auth/],
    ['a bad address', [...skip, '--addr', 'nope'], {}, /"nope".*--addr/],
    ['a bad address in the environment', ['--dev-insecure-skip-auth'], { PLATFORM_ADDR: ':99999' }, /":99999".*PLATFORM_ADDR/],
    ['a zero archive limit', [...skip, '--max-archive-bytes', '0'], {}, /--max-archive-bytes.*greater than 0/],
    ['a required claim without a value', [...skip, '--required-claim', 'groups'], {}, /--required-claim: expected claim=value/],
    ['skip-auth that is no boolean', ['--addr', '127.0.0.1:0'], { PLATFORM_DEV_INSECURE_SKIP_AUTH: 'yes' }, /"yes".*PLATFORM_DEV_INSECURE_SKIP_AUTH/],
    ['a database URL of another kind', [...skip], { PLATFORM_DATABASE_URL: 'mysql://root:hunter2@db/x' }, /^control: invalid value for PLATFORM_DATABASE_URL: expected a postgres/],
    ['a data directory that cannot be created', ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0', '--data-dir', join(aFile, 'data')], {}, /cannot create --data-dir .*a-file\/data/],
  ]
  // One child at a time: each exit wait (exitTimeoutMs) then times one Node start, not nine
  // starts fighting over two busy cores, which is what made this test time out under load.
  for (const [what, args, env, message] of cases) {
    const run = await runToExit(t, args, env)
    t.equal(run.code, 2, `${what}: exit code 2`)
    t.equal(run.stdout, '', `${what}: nothing on stdout`)
    t.equal(lines(run.stderr).length, 1, `${what}: exactly one line on stderr`)
    t.match(run.stderr, message, `${what}: says what is wrong`)
    t.match(run.stderr, /^control: /, `${what}: names the program`)
    t.notMatch(run.stderr, /hunter2/, `${what}: no password`)
  }
})

// Each unusable data directory ends the start with exit code 2 and one line that names it and
// says why. Tests run as root, whom chmod does not stop, so "not writable" is a directory the
// kernel refuses writes in whatever the caller: /sys/kernel (sysfs refuses new files, EACCES).
// /proc/<new name> is the path Node's recursive mkdir used to spin on forever (ENOENT from a
// parent that exists).
t.test('an unusable data directory: exit code 2 and one line naming it and the reason', async (t) => {
  const dir = scratchDir(t)
  const aFile = join(dir, 'a-file')
  writeFileSync(aFile, 'not a directory')
  const cases: Array<[string, string, RegExp]> = [
    ['a path under /proc that cannot be created', '/proc/control-forbidden', /^control: cannot create --data-dir \/proc\/control-forbidden: ENOENT/],
    ['a file', aFile, /^control: cannot use --data-dir .*a-file: it is not a directory/],
    ['below a file', join(aFile, 'data'), /^control: cannot create --data-dir .*a-file\/data: ENOTDIR/],
    ['a directory the kernel refuses writes in', '/sys/kernel', /^control: cannot write to --data-dir \/sys\/kernel: EACCES/],
  ]
  // One at a time, for the same reason as the startup errors above.
  for (const [what, dataDir, message] of cases) {
    const run = await runToExit(t, ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0', '--data-dir', dataDir])
    t.equal(run.code, 2, `${what}: exit code 2`)
    t.equal(run.stdout, '', `${what}: nothing on stdout`)
    t.equal(lines(run.stderr).length, 1, `${what}: exactly one line on stderr`)
    t.match(run.stderr, message, `${what}: names the directory and the reason`)
  }
})

t.test('an unreachable database: a fatal log line and exit code 1', async (t) => {
  const run = await runToExit(t, ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0'], { PLATFORM_DATABASE_URL: 'postgres://u:hunter2@127.0.0.1:1/x' })
  t.equal(run.code, 1)
  const fatal = lines(run.stdout).map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.level === 60)
  t.match(fatal, { msg: 'control plane failed to start', err: { code: 'ECONNREFUSED' } })
  t.notMatch(run.stdout + run.stderr, /hunter2/, 'the password is not logged')
})

t.test('first start from the environment: data directory created, JSON logs, skip-auth warning, /healthz', async (t) => {
  const dataDir = join(scratchDir(t), 'fresh', 'data')
  const control = await startProcess(t, [], { PLATFORM_DEV_INSECURE_SKIP_AUTH: 'true', PLATFORM_ADDR: '127.0.0.1:0', PLATFORM_DATA_DIR: dataDir })
  t.ok(existsSync(join(dataDir, 'PG_VERSION')), 'the embedded database is in the data directory')
  t.match(control.logs.find((l) => l.msg === 'database ready'), { level: 30, service: 'control', engine: 'pglite', dataDir, applied: [1] })
  const warning = control.logs.find((l) => /AUTHENTICATION IS OFF/.test(String(l.msg)))
  t.equal(warning?.level, 40, 'a warning that authentication is off')
  t.match(control.logs.find((l) => l.msg === 'control plane listening'), { port: control.port, host: '127.0.0.1' })
  t.not(control.port, 0, 'the log carries the port the OS picked')
  const health = await fetch(`http://127.0.0.1:${control.port}/healthz`)
  t.equal(health.status, 200)
  t.equal(await health.text(), 'ok')

  const healthy = spawnSync(process.execPath, [healthcheckJs], { env: childEnv({ PLATFORM_ADDR: `:${control.port}` }) })
  t.equal(healthy.status, 0, 'the container health check passes (":port" probes loopback)')
  control.child.kill('SIGTERM')
  await control.exited
  const unhealthy = spawnSync(process.execPath, [healthcheckJs], { env: childEnv({ PLATFORM_ADDR: `127.0.0.1:${control.port}` }) })
  t.equal(unhealthy.status, 1, 'and fails once it is gone')
})

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`graceful shutdown on ${signal}: exit 0, port released, data kept for the next start`, async (t) => {
    const { dataDir } = await freshStore(t, 'pglite')
    const args = ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0', '--data-dir', dataDir]
    const first = await startProcess(t, args)
    const created = await call(`http://127.0.0.1:${first.port}`, 'POST', '/applications', { json: { name: 'kept', language: 'go', runtime: 'wasmkube' } })
    t.equal(created.status, 201)
    const sentAt = Date.now()
    first.child.kill(signal)
    t.same(await first.exited, { code: 0, signal: null }, 'exit code 0')
    t.ok(Date.now() - sentAt < 4_000, 'within a few seconds')
    t.match(first.logs.find((l) => l.msg === 'shutting down'), { signal }, 'it logs the signal')
    t.ok(first.logs.some((l) => l.msg === 'control plane stopped'), 'the graceful path ran to the end')
    await t.rejects(fetch(`http://127.0.0.1:${first.port}/healthz`), 'the port is closed')

    const second = await startProcess(t, args)
    t.match(second.logs.find((l) => l.msg === 'database ready'), { applied: [] }, 'the restart migrates nothing')
    const list = await call(`http://127.0.0.1:${second.port}`, 'GET', '/applications')
    t.same((list.body as Array<{ name: string }>).map((a) => a.name), ['kept'], 'the application is still there')
  })
}

t.test('one process per embedded database: a second start on the same data directory exits 2', async (t) => {
  const dataDir = join(scratchDir(t), 'data')
  const args = ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0', '--data-dir', dataDir]
  const first = await startProcess(t, args)
  const lock = join(dataDir, 'control.pid')
  t.equal(readFileSync(lock, 'utf8'), `${first.child.pid}\n`, 'the lock names the owner')

  const second = await runToExit(t, args)
  t.equal(second.code, 2)
  t.equal(lines(second.stderr).length, 1, 'exactly one line on stderr')
  t.match(second.stderr, new RegExp(`^control: --data-dir .* is in use by process ${first.child.pid}: one control plane per embedded database`))
  const health = await fetch(`http://127.0.0.1:${first.port}/healthz`)
  t.equal(health.status, 200, 'the first keeps serving')

  first.child.kill('SIGTERM')
  t.same(await first.exited, { code: 0, signal: null })
  t.notOk(existsSync(lock), 'a clean stop gives the directory back')

  // A process killed outright leaves its lock; a pid that no longer runs does not hold it.
  const gone = spawnSync(process.execPath, ['-e', '']).pid
  writeFileSync(lock, `${gone}\n`)
  const third = await startProcess(t, args)
  t.equal(readFileSync(lock, 'utf8'), `${third.child.pid}\n`, 'a stale lock is taken over')
})

t.test('the health checks of both images (common/src/healthcheck.ts): exit 0 only on a 200 from /healthz', async (t) => {
  let status = 200
  const paths: string[] = []
  const server = createServer((req, res) => { paths.push(req.url ?? ''); res.statusCode = status; res.end() })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const { port } = server.address() as AddressInfo
  const probe = async (script: string, env: Record<string, string>): Promise<number | null> => {
    const child = spawn(process.execPath, [script], { env: childEnv(env), stdio: 'ignore' })
    return new Promise((resolve) => child.once('close', (code) => resolve(code)))
  }
  t.equal(await probe(healthcheckJs, { PLATFORM_ADDR: `:${port}` }), 0, 'control: 200')
  t.equal(await probe(relayHealthcheckJs, { RELAY_ADDR: `0.0.0.0:${port}` }), 0, 'relay: 200')
  t.same([...new Set(paths)], ['/healthz'], 'both ask /healthz')
  status = 503
  t.equal(await probe(healthcheckJs, { PLATFORM_ADDR: `127.0.0.1:${port}` }), 1, 'control: 503')
  t.equal(await probe(relayHealthcheckJs, { RELAY_ADDR: `127.0.0.1:${port}` }), 1, 'relay: 503')
})

if (ENGINES.includes('postgres')) {
  t.test('PLATFORM_DATABASE_URL runs it on PostgreSQL', async (t) => {
    const store = await freshStore(t, 'postgres')
    const control = await startProcess(t, ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0'], { PLATFORM_DATABASE_URL: store.databaseUrl })
    t.match(control.logs.find((l) => l.msg === 'database ready'), { engine: 'postgres', applied: [1] })
    t.notOk(control.logText().includes(new URL(store.databaseUrl).password), 'the password is not logged')
    const created = await call(`http://127.0.0.1:${control.port}`, 'POST', '/applications', { json: { name: 'on-postgres', language: 'rust', runtime: 'wasmkube' } })
    t.equal(created.status, 201)
  })
}

// ---------------------------------------------------------------------------------------------

