// The compiled control plane as an operator runs it: `node control/dist/main.js`.
// Configuration from the environment, JSON logs, the data directory, the container health
// check, and graceful shutdown on SIGTERM / SIGINT (start-up refusals: process-startup.test.ts).
import { spawn, spawnSync } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { call, ENGINES, freshStore } from '../helpers/control.js'
import { controlHealthcheckJs as healthcheckJs, controlProcess, scratchDir } from '../helpers/control-process.js'
import { lines } from '../helpers/process.js'

const relayHealthcheckJs = fileURLToPath(new URL('../../relay/dist/healthcheck.js', import.meta.url))
const { childEnv, runToExit, start: startProcess } = controlProcess

// Eight control plane starts (PGlite) one after another: 123 s measured at a load average of 14 on two cores.
t.setTimeout(480_000)

t.test(
  'first start from the environment: data directory created, JSON logs, skip-auth warning, /healthz',
  async (t) => {
    const dataDir = join(scratchDir(t), 'fresh', 'data')
    const control = await startProcess(t, [], {
      PLATFORM_DEV_INSECURE_SKIP_AUTH: 'true',
      PLATFORM_ADDR: '127.0.0.1:0',
      PLATFORM_DATA_DIR: dataDir,
    })
    t.ok(existsSync(join(dataDir, 'PG_VERSION')), 'the embedded database is in the data directory')
    t.match(
      control.logs.find((l) => l.msg === 'database ready'),
      { level: 30, service: 'control', engine: 'pglite', dataDir, applied: [1] },
    )
    const warning = control.logs.find((l) => /AUTHENTICATION IS OFF/.test(String(l.msg)))
    t.equal(warning?.level, 40, 'a warning that authentication is off')
    t.match(
      control.logs.find((l) => l.msg === 'control plane listening'),
      { port: control.port, host: '127.0.0.1' },
    )
    t.not(control.port, 0, 'the log carries the port the OS picked')
    const health = await fetch(`http://127.0.0.1:${control.port}/healthz`)
    t.equal(health.status, 200)
    t.equal(await health.text(), 'ok')

    const healthy = spawnSync(process.execPath, [healthcheckJs], {
      env: childEnv({ PLATFORM_ADDR: `:${control.port}` }),
    })
    t.equal(healthy.status, 0, 'the container health check passes (":port" probes loopback)')
    control.child.kill('SIGTERM')
    await control.exited
    const unhealthy = spawnSync(process.execPath, [healthcheckJs], {
      env: childEnv({ PLATFORM_ADDR: `127.0.0.1:${control.port}` }),
    })
    t.equal(unhealthy.status, 1, 'and fails once it is gone')
  },
)

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`graceful shutdown on ${signal}: exit 0, port released, data kept for the next start`, async (t) => {
    const { dataDir } = await freshStore(t, 'pglite')
    const args = ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0', '--data-dir', dataDir]
    const first = await startProcess(t, args)
    const created = await call(`http://127.0.0.1:${first.port}`, 'POST', '/applications', {
      json: { name: 'kept', language: 'go', runtime: 'wasmkube' },
    })
    t.equal(created.status, 201)
    first.child.kill(signal)
    t.same(await first.exited, { code: 0, signal: null }, 'exit code 0')
    t.match(
      first.logs.find((l) => l.msg === 'shutting down'),
      { signal },
      'it logs the signal',
    )
    // The hard stop (common/src/lifecycle.ts) exits before this line: it bounds the time, not a stopwatch here.
    t.ok(
      first.logs.some((l) => l.msg === 'control plane stopped'),
      'the graceful path ran to the end, before the hard stop',
    )
    await t.rejects(fetch(`http://127.0.0.1:${first.port}/healthz`), 'the port is closed')

    const second = await startProcess(t, args)
    t.match(
      second.logs.find((l) => l.msg === 'database ready'),
      { applied: [] },
      'the restart migrates nothing',
    )
    const list = await call(`http://127.0.0.1:${second.port}`, 'GET', '/applications')
    t.same(
      (list.body as Array<{ name: string }>).map((a) => a.name),
      ['kept'],
      'the application is still there',
    )
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
  t.match(
    second.stderr,
    new RegExp(
      `^control: --data-dir .* is in use by process ${first.child.pid}: one control plane per embedded database`,
    ),
  )
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

t.test(
  'the health checks of both images (common/src/healthcheck.ts): exit 0 only on a 200 from /healthz',
  async (t) => {
    let status = 200
    const paths: string[] = []
    const server = createServer((req, res) => {
      paths.push(req.url ?? '')
      res.statusCode = status
      res.end()
    })
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
  },
)

if (ENGINES.includes('postgres')) {
  t.test('PLATFORM_DATABASE_URL runs it on PostgreSQL', async (t) => {
    const store = await freshStore(t, 'postgres')
    const control = await startProcess(t, ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0'], {
      PLATFORM_DATABASE_URL: store.databaseUrl,
    })
    t.match(
      control.logs.find((l) => l.msg === 'database ready'),
      { engine: 'postgres', applied: [1] },
    )
    t.notOk(control.logText().includes(new URL(store.databaseUrl).password), 'the password is not logged')
    const created = await call(`http://127.0.0.1:${control.port}`, 'POST', '/applications', {
      json: { name: 'on-postgres', language: 'rust', runtime: 'wasmkube' },
    })
    t.equal(created.status, 201)
  })
}

// ---------------------------------------------------------------------------------------------
