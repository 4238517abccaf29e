// A hostile function against the sandbox (one real componentize in this file). Its world
// imports the environment, the filesystem, sockets and exit, and its code tries each of them
// and fetches what a query names. The real builder refuses it, naming the import; built by
// hand (the builder's own bundler and j2w, without the builder's check) the local runtime's
// worker runs it with nothing to reach: no environment, no directories, no socket, `exit`
// fails the request and not the worker, and outgoing requests go only to
// allowed_outbound_hosts and never to a loopback address, by name or literal, unless the
// operator allows the range; a request that never returns answers 504 at its deadline while
// the others go on answering.
import { mkdtempSync, rmSync } from 'node:fs'
import { Writable } from 'node:stream'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { pushSpinApp } from '@session-relay/spin/artifact'
import { layoutStore } from '@session-relay/spin/layout'
import { createLocalHosts } from '@session-relay/control/local/hosts'
import type { LocalHostsDeps } from '@session-relay/control/local/hosts'
import { createLogger } from '@session-relay/control/logger'
import { runBuilder, sourceArchive } from '../helpers/spin-processes.js'
import { listener, probeComponent, probeFiles } from '../fixtures/sandbox-probe.js'
import { SHARED_COMPILED, WORKER_BIN } from '../helpers/worker-probe.js'

t.setTimeout(300_000)

type Served = { url: string; output: () => Promise<string> }

/** The application `ref` loaded into a worker of its own, as the local runtime loads it. */
async function serve(
  t: Test,
  ref: string,
  options: Pick<LocalHostsDeps, 'allowPrivateOutbound' | 'limits'> = {},
): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-worker-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const logger = createLogger(
    'info',
    new Writable({
      write(_chunk, _encoding, done) {
        done()
      },
    }),
  )
  const hosts = createLocalHosts({ logger, dir, worker: () => WORKER_BIN, cacheDir: SHARED_COMPILED, ...options })
  t.teardown(() => hosts.close())
  await hosts.deploy({ id: 'hostile' }, ref)
  // The hand-built component compiles at its first load (7-25 s, more on a loaded machine).
  const url = await hosts.url('hostile', 240_000)
  if (typeof url !== 'string') throw new Error(`not loaded: ${String(url)}`)
  const output = (): Promise<string> =>
    new Promise((resolve) => {
      let text = ''
      const stream = hosts.log('hostile', { follow: false })!
      stream.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8')
      })
      stream.on('end', () => resolve(text))
    })
  return { url, output }
}

async function ask(
  url: string,
  query: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url}/?${new URLSearchParams(query).toString()}`)
  const text = await response.text()
  return {
    status: response.status,
    body:
      response.headers.get('content-type') === 'application/json'
        ? (JSON.parse(text) as Record<string, unknown>)
        : { text },
  }
}

async function fetched(url: string, target: string): Promise<Record<string, unknown>> {
  return (await ask(url, { probe: 'fetch', url: target })).body
}

t.test(
  'the builder refuses a function that imports the environment, files or sockets, naming the import',
  async (t) => {
    const archive = await sourceArchive(t, { name: 'hostile', language: 'js' }, [
      { name: 'probe', route: '/...', files: probeFiles() },
    ])
    const dir = t.testdir({ image: {} })
    const build = await runBuilder(t, {
      SOURCE_ARCHIVE: archive,
      IMAGE_REF: `oci-layout:${dir}/image:b1`,
      APPLICATION: 'hostile',
      LANGUAGE: 'js',
      BUILD_ID: 'b1',
    })
    t.not(build.code, 0, 'the build fails')
    t.match(
      build.termination,
      /^function probe: functions\/probe\/src\/index\.js:1:\d+: error: imports wasi:cli\/environment@0\.2\.3, but functions get no environment here/,
      'the first refused import is the reason',
    )
    t.match(build.log, /imports wasi:filesystem\/preopens@0\.2\.3, but functions get no files here/)
    t.match(build.log, /imports wasi:sockets\/instance-network@0\.2\.3, but functions get no sockets here/)
    t.notMatch(build.log, /componentize/, 'refused before the component is made')
  },
)

t.test('a hand-built hostile component reaches nothing the worker has', async (t) => {
  const root = t.testdir({ image: {} })
  const wasm = await probeComponent(t)
  const allowedByName = await listener(t)
  const literal = await listener(t)
  const unlisted = await listener(t)
  const socketTarget = await listener(t)
  await pushSpinApp(layoutStore(join(root, 'image')), 'v1', {
    lockedApp: {
      spin_lock_version: 1,
      triggers: [
        { id: 'probe-http-trigger', trigger_type: 'http', trigger_config: { component: 'probe', route: '/...' } },
      ],
      components: [
        {
          id: 'probe',
          metadata: {
            allowed_outbound_hosts: [`http://localhost:${allowedByName.port}`, `http://127.0.0.1:${literal.port}`],
          },
          source: { content_type: 'application/wasm', source: 'file:///probe.wasm' },
        },
      ],
    },
    wasm: new Map([['probe', wasm]]),
  })
  const ref = `oci-layout:${join(root, 'image')}:v1`
  const host = await serve(t, ref)

  t.same(
    await ask(host.url, { probe: 'environment' }),
    { status: 200, body: { entries: [] } },
    'no environment, though the control plane has one',
  )
  t.same(await ask(host.url, { probe: 'directories' }), { status: 200, body: { paths: [] } }, 'no directories')
  const socket = await ask(host.url, { probe: 'socket', port: String(socketTarget.port) })
  t.ok(socket.body.error, `no socket: ${JSON.stringify(socket.body)}`)

  t.ok(
    (await fetched(host.url, `http://127.0.0.1:${unlisted.port}/metrics`)).error,
    'a host not in allowed_outbound_hosts is refused',
  )
  t.ok(
    (await fetched(host.url, `http://localhost:${allowedByName.port}/`)).error,
    'an allowed name that resolves to loopback is refused',
  )
  t.ok((await fetched(host.url, `http://127.0.0.1:${literal.port}/`)).error, 'an allowed loopback address is refused')
  t.equal(
    unlisted.hits() + allowedByName.hits() + literal.hits() + socketTarget.hits(),
    0,
    'no connection reached any listener',
  )
  const output = await host.output()
  t.match(output, /"msg":"outgoing request refused"[^\n]*"reason":"not in allowed_outbound_hosts"/)
  t.match(output, /"msg":"outgoing request refused"[^\n]*"reason":"resolves only to internal addresses"/)
  t.notMatch(output, /\/metrics/, 'the refused URL path is not logged')

  const exited = await fetch(`${host.url}/?probe=exit`)
  t.equal(exited.status, 500, 'exit fails the request')
  await exited.body?.cancel()
  t.same(
    await ask(host.url, { probe: 'directories' }),
    { status: 200, body: { paths: [] } },
    'and the worker goes on answering',
  )

  // The operator opens loopback (both families: localhost may resolve to ::1 too): the listed
  // hosts are reached, an unlisted one still is not.
  const open = await serve(t, ref, { allowPrivateOutbound: ['127.0.0.0/8', '::1/128'] })
  t.same(
    await fetched(open.url, `http://localhost:${allowedByName.port}/`),
    { status: 200, body: 'reached' },
    'an allowed name in an allowed range',
  )
  t.same(
    await fetched(open.url, `http://127.0.0.1:${literal.port}/`),
    { status: 200, body: 'reached' },
    'an allowed address in an allowed range',
  )
  t.ok((await fetched(open.url, `http://127.0.0.1:${unlisted.port}/`)).error, 'still only allowed_outbound_hosts')
  t.equal(unlisted.hits(), 0)
})

t.test('a request that never returns: 504 at the deadline, and the worker answers others throughout', async (t) => {
  const root = t.testdir({ image: {} })
  await pushSpinApp(layoutStore(join(root, 'image')), 'v1', {
    lockedApp: {
      spin_lock_version: 1,
      triggers: [
        { id: 'probe-http-trigger', trigger_type: 'http', trigger_config: { component: 'probe', route: '/...' } },
      ],
      components: [{ id: 'probe', source: { content_type: 'application/wasm', source: 'file:///probe.wasm' } }],
    },
    wasm: new Map([['probe', await probeComponent(t)]]),
  })
  const host = await serve(t, `oci-layout:${join(root, 'image')}:v1`, { limits: { requestTimeoutMs: 1000 } })
  // More spinning requests than cores, at once.
  const spinning = [1, 2, 3].map(async () => (await fetch(`${host.url}/?probe=spin`)).status)
  t.same(
    await ask(host.url, { probe: 'directories' }),
    { status: 200, body: { paths: [] } },
    'another request is answered meanwhile',
  )
  t.same(await Promise.all(spinning), [504, 504, 504], 'each ends at its deadline')
  t.same(await ask(host.url, { probe: 'directories' }), { status: 200, body: { paths: [] } }, 'and the worker goes on')
  t.match(await host.output(), /"msg":"the instance was stopped"[^\n]*"reason":"deadline"/, 'the log says why')
})
