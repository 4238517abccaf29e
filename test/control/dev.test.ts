// `npm run dev` (scripts/dev.ts, compiled): the relay and the control plane side by side with
// prefixed output, both stopped by one Ctrl+C, and the other stopped when one of them dies.
// Addresses and the data directory come from the environment the services inherit, so the
// test needs no fixed ports.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import type { Test } from 'tap'
import { withTimeout } from '../helpers/wait.js'
import { stopAtTeardown } from '../helpers/stop-child.js'

const devJs = fileURLToPath(new URL('../../dist/scripts/dev.js', import.meta.url))

// A bound for a hung start, not an expectation (no contract names one): a relay and a control
// plane (PGlite) start side by side, which took up to 30 s for the control plane alone at a load
// average of 14 on two cores. Five such starts in the file.
const START_BOUND_MS = 120_000
t.setTimeout(5 * START_BOUND_MS)

function startDev(t: Test, extraEnv: Record<string, string> = {}, args: string[] = []) {
  const dir = mkdtempSync(join(tmpdir(), 'control-dev-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(PLATFORM_|RELAY_|TAP)/.test(key)) env[key] = value
  }
  Object.assign(env, {
    RELAY_ADDR: '127.0.0.1:0',
    PLATFORM_ADDR: '127.0.0.1:0',
    PLATFORM_DATA_DIR: join(dir, 'data'),
    ...extraEnv,
  })
  const child = spawn(process.execPath, [devJs, ...args], { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk
  })
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)))
  stopAtTeardown(t, child)
  /** Resolves once `check` holds, tried on each chunk of output; fails if `npm run dev` ends first. */
  const waitFor = (check: () => boolean, what: string): Promise<void> =>
    withTimeout(
      new Promise<void>((resolve, reject) => {
        const test = (): void => {
          if (!check()) return
          child.stdout.off('data', test)
          child.stderr.off('data', test)
          resolve()
        }
        child.stdout.on('data', test)
        child.stderr.on('data', test)
        void exited.then((code) => reject(new Error(`exited (${String(code)}) before ${what}: ${output}`)))
        test()
      }),
      START_BOUND_MS,
      what,
    )
  /** The port a service logged, from its prefixed JSON line. */
  const port = (service: string, message: string): number | undefined => {
    return entry(service, message)?.port
  }
  /** A service's JSON log line with this message. */
  const entry = (service: string, message: string): { msg?: string; port?: number; host?: string } | undefined => {
    for (const line of output.split('\n')) {
      if (!line.startsWith(`${service.padEnd(7)} | {`)) continue
      const parsed = JSON.parse(line.slice(10)) as { msg?: string; port?: number; host?: string }
      if (parsed.msg === message) return parsed
    }
    return undefined
  }
  return { child, exited, output: () => output, port, entry, waitFor }
}

t.test('both services start with prefixed output and stop together on SIGINT', async (t) => {
  const dev = startDev(t)
  await dev.waitFor(
    () =>
      dev.port('relay', 'relay listening') !== undefined &&
      dev.port('control', 'control plane listening') !== undefined,
    'both services to listen',
  )
  const relay = await fetch(`http://127.0.0.1:${dev.port('relay', 'relay listening')}/healthz`)
  t.equal(relay.status, 200, 'the relay answers')
  const control = await fetch(`http://127.0.0.1:${dev.port('control', 'control plane listening')}/api/v1/applications`)
  t.equal(control.status, 200, 'the control plane answers without a token')
  t.match(dev.output(), /^relay {3}\| .*auth is disabled/m, 'relay lines are prefixed, auth off')
  t.match(dev.output(), /^control \| .*AUTHENTICATION IS OFF/m, 'control lines are prefixed, auth off')

  dev.child.kill('SIGINT')
  t.equal(await dev.exited, 0, 'exit code 0')
  t.match(dev.output(), /^relay {3}\| exited \(code 0\)$/m, 'the relay shut down gracefully')
  t.match(dev.output(), /^control \| exited \(code 0\)$/m, 'the control plane shut down gracefully')
  t.match(dev.output(), /control plane stopped/, 'through its graceful path')
})

t.test('when one service dies, the other is stopped and the exit code says so', async (t) => {
  const dev = startDev(t, { PLATFORM_MAX_ARCHIVE_BYTES: '0' })
  t.equal(await dev.exited, 2, "the control plane's exit code 2")
  t.match(
    dev.output(),
    /^control \| control: invalid value "0" for PLATFORM_MAX_ARCHIVE_BYTES/m,
    'its error line, prefixed',
  )
  t.match(dev.output(), /^relay {3}\| exited \((code 0|SIGTERM)\)$/m, 'the relay was stopped')
})

// Authentication is off in `npm run dev`: listening on every interface would hand the API to
// anyone on the network.
t.test('loopback only unless --host says otherwise: an address without a host gets 127.0.0.1', async (t) => {
  const dev = startDev(t, { RELAY_ADDR: ':0', PLATFORM_ADDR: ':0' })
  await dev.waitFor(
    () =>
      dev.port('relay', 'relay listening') !== undefined &&
      dev.port('control', 'control plane listening') !== undefined,
    'both services to listen',
  )
  t.equal(dev.entry('relay', 'relay listening')?.host, '127.0.0.1')
  t.equal(dev.entry('control', 'control plane listening')?.host, '127.0.0.1')
  dev.child.kill('SIGINT')
  t.equal(await dev.exited, 0)

  const open = startDev(t, { RELAY_ADDR: ':0', PLATFORM_ADDR: ':0' }, ['--host', '0.0.0.0'])
  await open.waitFor(() => open.port('control', 'control plane listening') !== undefined, 'the control plane to listen')
  t.equal(open.entry('control', 'control plane listening')?.host, '0.0.0.0', '--host opens it up')
  open.child.kill('SIGINT')
  t.equal(await open.exited, 0)
})

t.test(
  '--relay-port and --control-port move the services; --help prints the table; a bad port is exit 2',
  async (t) => {
    // No RELAY_ADDR / PLATFORM_ADDR: the ports come from the flags, 0 letting the system pick
    // (the defaults, 8080 and 8081, would be what listens if the flags were not read).
    const dev = startDev(t, { RELAY_ADDR: '', PLATFORM_ADDR: '' }, ['--relay-port', '0', '--control-port', '0'])
    await dev.waitFor(
      () =>
        dev.port('relay', 'relay listening') !== undefined &&
        dev.port('control', 'control plane listening') !== undefined,
      'both services to listen',
    )
    t.not(dev.port('relay', 'relay listening'), 8080, 'the relay on the port asked for')
    t.not(dev.port('control', 'control plane listening'), 8081, 'the control plane on the port asked for')
    t.equal(dev.entry('relay', 'relay listening')?.host, '127.0.0.1', 'still loopback')
    dev.child.kill('SIGINT')
    t.equal(await dev.exited, 0)

    const help = spawnSync(process.execPath, [devJs, '--help'], { encoding: 'utf8' })
    t.equal(help.status, 0)
    t.match(
      help.stdout,
      /--relay-port, DEV_RELAY_PORT \(default 8080\)[\s\S]*--control-port, DEV_CONTROL_PORT \(default 8081\)/,
    )
    const bad = spawnSync(process.execPath, [devJs, '--control-port', '70000'], { encoding: 'utf8' })
    t.equal(bad.status, 2)
    t.match(bad.stderr, /^dev: invalid value "70000" for --control-port/)
  },
)

t.test("under the machine's older Node it says which Node it needs instead of starting", async (t) => {
  // The Node that bootstraps npm on these machines (Debian's, 20): the first one on PATH
  // outside the project's node_modules that is older than 22.
  const older = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.includes('node_modules'))
    .map((dir) => join(dir, 'node'))
    .find(
      (node) =>
        existsSync(node) &&
        Number(spawnSync(node, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).stdout.trim()) < 22,
    )
  if (older === undefined) {
    t.fail("no Node older than 22 on PATH: this machine kind bootstraps with Debian 12's Node 20")
    return
  }
  const run = spawnSync(older, [devJs], { encoding: 'utf8' })
  t.equal(run.status, 2)
  t.match(
    run.stderr,
    /^dev: needs Node 22\.18 or newer \(package\.json "engines"\); this is Node 20\.[\d.]+\. Run it as `npm run dev`/,
  )
})
