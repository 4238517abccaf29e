// A hostile function against the sandbox (one real componentize in this file). Its world
// imports the environment, the filesystem, sockets and exit, and its code tries each of them
// and fetches what a query names. The real builder refuses it, naming the import; built by
// hand (the builder's own bundler and j2w, without the builder's check) the host runs it
// with nothing to reach: no environment, no directories, no socket, `exit` fails the request
// and not the host, and outgoing requests go only to allowed_outbound_hosts and never to a
// loopback address, by name or literal, unless the operator allows the range.
// No deployment runs on the host any more (the local runtime's worker does:
// test/control/local-sandbox.test.ts); the cluster tests' fake spin-operator still serves with it,
// so its sandbox stays tested until host/ goes.
import { join } from 'node:path'
import t from 'tap'
import { pushSpinApp } from '@session-relay/spin/artifact'
import { layoutStore } from '@session-relay/spin/layout'
import { runBuilder, sourceArchive, startHost } from '../helpers/spin-processes.js'
import { listener, probeComponent, probeFiles } from '../fixtures/sandbox-probe.js'

t.setTimeout(300_000)

async function ask (url: string, query: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url}/?${new URLSearchParams(query).toString()}`)
  const text = await response.text()
  return { status: response.status, body: response.headers.get('content-type') === 'application/json' ? JSON.parse(text) as Record<string, unknown> : { text } }
}

async function fetched (url: string, target: string): Promise<Record<string, unknown>> {
  return (await ask(url, { probe: 'fetch', url: target })).body
}

t.test('the builder refuses a function that imports the environment, files or sockets, naming the import', async (t) => {
  const archive = await sourceArchive(t, { name: 'hostile', language: 'js' }, [{ name: 'probe', route: '/...', files: probeFiles() }])
  const dir = t.testdir({ image: {} })
  const build = await runBuilder(t, { SOURCE_ARCHIVE: archive, IMAGE_REF: `oci-layout:${dir}/image:b1`, APPLICATION: 'hostile', LANGUAGE: 'js', BUILD_ID: 'b1' })
  t.not(build.code, 0, 'the build fails')
  t.match(build.termination, /^function probe: functions\/probe\/src\/index\.js:1:\d+: error: imports wasi:cli\/environment@0\.2\.3, but functions get no environment here/, 'the first refused import is the reason')
  t.match(build.log, /imports wasi:filesystem\/preopens@0\.2\.3, but functions get no files here/)
  t.match(build.log, /imports wasi:sockets\/instance-network@0\.2\.3, but functions get no sockets here/)
  t.notMatch(build.log, /componentize/, 'refused before the component is made')
})

t.test('a hand-built hostile component reaches nothing the host has', async (t) => {
  const root = t.testdir({ image: {}, cache: {} })
  const wasm = await probeComponent(t)
  const allowedByName = await listener(t)
  const literal = await listener(t)
  const unlisted = await listener(t)
  const socketTarget = await listener(t)
  await pushSpinApp(layoutStore(join(root, 'image')), 'v1', {
    lockedApp: {
      spin_lock_version: 1,
      triggers: [{ id: 'probe-http-trigger', trigger_type: 'http', trigger_config: { component: 'probe', route: '/...' } }],
      components: [{
        id: 'probe',
        metadata: { allowed_outbound_hosts: [`http://localhost:${allowedByName.port}`, `http://127.0.0.1:${literal.port}`] },
        source: { content_type: 'application/wasm', source: 'file:///probe.wasm' },
      }],
    },
    wasm: new Map([['probe', wasm]]),
  })
  const ref = `oci-layout:${join(root, 'image')}:v1`
  const host = await startHost(t, ['--ref', ref, '--cache-dir', join(root, 'cache')], { PROBE_SECRET_OF_THE_HOST: 'host-only-value' })

  t.same(await ask(host.url, { probe: 'environment' }), { status: 200, body: { entries: [] } }, 'no environment, though the host has one')
  t.same(await ask(host.url, { probe: 'directories' }), { status: 200, body: { paths: [] } }, 'no directories')
  const socket = await ask(host.url, { probe: 'socket', port: String(socketTarget.port) })
  t.ok(socket.body.error, `no socket: ${JSON.stringify(socket.body)}`)

  t.ok((await fetched(host.url, `http://127.0.0.1:${unlisted.port}/metrics`)).error, 'a host not in allowed_outbound_hosts is refused')
  t.ok((await fetched(host.url, `http://localhost:${allowedByName.port}/`)).error, 'an allowed name that resolves to loopback is refused')
  t.ok((await fetched(host.url, `http://127.0.0.1:${literal.port}/`)).error, 'an allowed loopback address is refused')
  t.equal(unlisted.hits() + allowedByName.hits() + literal.hits() + socketTarget.hits(), 0, 'no connection reached any listener')
  t.match(host.output(), /outgoing request refused: not in allowed_outbound_hosts/)
  t.notMatch(host.output(), /\/metrics/, 'the refused URL path is not logged')

  const exited = await fetch(`${host.url}/?probe=exit`)
  t.equal(exited.status, 502, 'exit fails the request')
  await exited.body?.cancel()
  t.same(await ask(host.url, { probe: 'directories' }), { status: 200, body: { paths: [] } }, 'and the host goes on answering')

  // The operator opens loopback (both families: localhost may resolve to ::1 too): the listed
  // hosts are reached, an unlisted one still is not.
  const open = await startHost(t, ['--ref', ref, '--cache-dir', join(root, 'cache'), '--allow-private-outbound', '127.0.0.0/8,::1/128'])
  t.same(await fetched(open.url, `http://localhost:${allowedByName.port}/`), { status: 200, body: 'reached' }, 'an allowed name in an allowed range')
  t.same(await fetched(open.url, `http://127.0.0.1:${literal.port}/`), { status: 200, body: 'reached' }, 'an allowed address in an allowed range')
  t.ok((await fetched(open.url, `http://127.0.0.1:${unlisted.port}/`)).error, 'still only allowed_outbound_hosts')
  t.equal(unlisted.hits(), 0)
})

t.test('a request that never returns: the host frees its core past the deadline', async (t) => {
  const root = t.testdir({ source: {}, image: {}, cache: {} })
  await pushSpinApp(layoutStore(join(root, 'image')), 'v1', {
    lockedApp: {
      spin_lock_version: 1,
      triggers: [{ id: 'probe-http-trigger', trigger_type: 'http', trigger_config: { component: 'probe', route: '/...' } }],
      components: [{ id: 'probe', source: { content_type: 'application/wasm', source: 'file:///probe.wasm' } }],
    },
    wasm: new Map([['probe', await probeComponent(t)]]),
  })
  const host = await startHost(t, ['--ref', `oci-layout:${join(root, 'image')}:v1`, '--cache-dir', join(root, 'cache'), '--request-timeout', '1s'])
  const request = fetch(`${host.url}/?probe=spin`).catch((error: unknown) => error)
  const exit = await host.exited
  t.equal(exit.signal, 'SIGKILL', 'the host ended itself: its thread could not')
  t.match(host.output(), /a request held the host past its deadline: the host kills itself to free the core/)
  t.ok(await request instanceof Error, 'the request ends with the connection')
})

