// A hostile function against the sandbox (one real componentize in this file). Its world
// imports the environment, the filesystem, sockets and exit, and its code tries each of them
// and fetches what a query names. The real builder refuses it, naming the import; built by
// hand (the builder's own bundler and j2w, without the builder's check) the local runtime's
// worker runs it with nothing to reach: no environment, no directories, no socket, `exit`
// fails the request and not the worker, and outgoing requests go only to
// allowed_outbound_hosts and never to a loopback address, by name or literal, unless the
// operator allows the range; a request that never returns answers 504 at its deadline while
// the others go on answering.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { Writable } from 'node:stream'
import { tmpdir } from 'node:os'
import { mkdir, symlink, writeFile, readFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import type { AddressInfo, Server, Socket } from 'node:net'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { pushSpinApp } from '../../common/src/spin/artifact.js'
import { layoutStore } from '../../common/src/spin/layout.js'
import { templateFiles } from '../../builders/src/templates.js'
import { createLocalHosts } from '../../control/src/local/hosts.js'
import type { LocalHostsDeps } from '../../control/src/local/hosts.js'
import { createLogger } from '../../control/src/logger.js'
import { childEnv, runBuilder, sourceArchive } from '../helpers/spin-processes.js'
import { stopAtTeardown } from '../helpers/stop-child.js'
import { SHARED_COMPILED, WORKER_BIN } from '../helpers/worker-probe.js'

t.setTimeout(300_000)

const require = createRequire(import.meta.url)
const buildTools = dirname(require.resolve('@spinframework/build-tools/package.json'))
// Every WASI package at 0.2.3, as the http world's package ships them.
const WASI_WIT = readFileSync(join(dirname(require.resolve('@spinframework/wasi-http-proxy/package.json')), 'wit', 'wasi-http@0.2.3.wit'), 'utf8')

const PROBE_WORLD = `package probe:sandbox@0.1.0;

world probe {
  import wasi:cli/environment@0.2.3;
  import wasi:cli/exit@0.2.3;
  import wasi:filesystem/preopens@0.2.3;
  import wasi:sockets/instance-network@0.2.3;
  import wasi:sockets/tcp-create-socket@0.2.3;
}
`

const PROBE = `import { getEnvironment } from 'wasi:cli/environment@0.2.3'
import { exit } from 'wasi:cli/exit@0.2.3'
import { getDirectories } from 'wasi:filesystem/preopens@0.2.3'
import { instanceNetwork } from 'wasi:sockets/instance-network@0.2.3'
import { createTcpSocket } from 'wasi:sockets/tcp-create-socket@0.2.3'
addEventListener('fetch', (event) => { event.respondWith(handle(event.request)) })
const json = (value) => new Response(JSON.stringify(value), { headers: { 'content-type': 'application/json' } })
async function handle (request) {
  const query = new URL(request.url).searchParams
  try {
    switch (query.get('probe')) {
      case 'environment': return json({ entries: getEnvironment() })
      case 'directories': return json({ paths: getDirectories().map((entry) => entry[1]) })
      case 'socket': {
        const socket = createTcpSocket('ipv4')
        socket.startConnect(instanceNetwork(), { tag: 'ipv4', val: { port: Number(query.get('port')), address: [127, 0, 0, 1] } })
        return json({ connecting: true })
      }
      case 'exit': exit({ tag: 'ok' }); return json({ exited: false })
      case 'spin': for (;;) {}
      case 'fetch': {
        const answer = await fetch(query.get('url'))
        return json({ status: answer.status, body: await answer.text() })
      }
    }
    return json({ unknown: true })
  } catch (error) {
    return json({ error: String(error.payload ?? error) })
  }
}
`

function probeFiles (): Record<string, string> {
  const files = templateFiles('js', 'probe')
  const pkg = JSON.parse(files['package.json'] as string) as { config: { witDependencies: unknown[] } }
  pkg.config.witDependencies.push({ witPath: './probe-wit', package: 'probe:sandbox@0.1.0', world: 'probe' })
  files['package.json'] = JSON.stringify(pkg, null, 2)
  files['probe-wit/probe.wit'] = PROBE_WORLD
  files['probe-wit/deps/wasi.wit'] = WASI_WIT
  files['src/index.js'] = PROBE
  return files
}

/** A TCP listener counting the connections it gets; HTTP requests are answered "reached". */
async function listener (t: Test): Promise<{ port: number; hits: () => number }> {
  let hits = 0
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    hits++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    socket.end('HTTP/1.1 200 OK\r\ncontent-length: 7\r\nconnection: close\r\n\r\nreached')
  })
  // A client that keeps its end open would hold close() forever.
  t.teardown(() => new Promise<void>((resolve) => {
    server.close(() => resolve())
    for (const socket of sockets) socket.destroy()
  }))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { port: (server.address() as AddressInfo).port, hits: () => hits }
}

async function run (t: Test, command: string, args: string[], cwd: string): Promise<void> {
  const child = spawn(command, args, { cwd, env: childEnv({}), stdio: ['ignore', 'pipe', 'pipe'] })
  stopAtTeardown(t, child)
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const [code] = await once(child, 'close') as [number | null]
  if (code !== 0) throw new Error(`${args.join(' ')} failed (${String(code)}): ${output}`)
}

/** What the builder would make without its check: the same bundler plugin, then j2w. */
async function buildByHand (t: Test, dir: string): Promise<Buffer> {
  for (const [path, content] of Object.entries(probeFiles())) {
    await mkdir(dirname(join(dir, path)), { recursive: true })
    await writeFile(join(dir, path), content)
  }
  await symlink(dirname(dirname(buildTools)), join(dir, 'node_modules'), 'dir')
  await writeFile(join(dir, 'bundle.mjs'), `import { build } from 'esbuild'
import { SpinEsbuildPlugin } from '@spinframework/build-tools/plugins/esbuild/index.js'
await build({ entryPoints: ['src/index.js'], outfile: 'bundle.js', bundle: true, format: 'esm', platform: 'node', target: 'es2020', plugins: [await SpinEsbuildPlugin()] })
`)
  await run(t, process.execPath, ['bundle.mjs'], dir)
  await run(t, process.execPath, [join(buildTools, 'dist', 'index.js'), '-i', 'bundle.js', '-o', 'component.wasm'], dir)
  return readFile(join(dir, 'component.wasm'))
}

// Built once for the file (7-15 s and ~600 MB each time).
const probeDir = mkdtempSync(join(tmpdir(), 'sandbox-probe-'))
t.teardown(() => rmSync(probeDir, { recursive: true, force: true }))
let probeBuilt: Promise<Buffer> | null = null
function probeComponent (t: Test): Promise<Buffer> {
  probeBuilt ??= buildByHand(t, probeDir)
  return probeBuilt
}

type Served = { url: string; output: () => Promise<string> }

/** The application `ref` loaded into a worker of its own, as the local runtime loads it. */
async function serve (t: Test, ref: string, options: Pick<LocalHostsDeps, 'allowPrivateOutbound' | 'limits'> = {}): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-worker-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const logger = createLogger('info', new Writable({ write (_chunk, _encoding, done) { done() } }))
  const hosts = createLocalHosts({ logger, dir, worker: () => WORKER_BIN, cacheDir: SHARED_COMPILED, ...options })
  t.teardown(() => hosts.close())
  await hosts.deploy({ id: 'hostile' }, ref)
  // The hand-built component compiles at its first load (7-25 s, more on a loaded machine).
  const url = await hosts.url('hostile', 240_000)
  if (typeof url !== 'string') throw new Error(`not loaded: ${String(url)}`)
  const output = (): Promise<string> => new Promise((resolve) => {
    let text = ''
    const stream = hosts.log('hostile', { follow: false })!
    stream.on('data', (chunk: Buffer) => { text += chunk.toString('utf8') })
    stream.on('end', () => resolve(text))
  })
  return { url, output }
}

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
  const host = await serve(t, ref)

  t.same(await ask(host.url, { probe: 'environment' }), { status: 200, body: { entries: [] } }, 'no environment, though the control plane has one')
  t.same(await ask(host.url, { probe: 'directories' }), { status: 200, body: { paths: [] } }, 'no directories')
  const socket = await ask(host.url, { probe: 'socket', port: String(socketTarget.port) })
  t.ok(socket.body.error, `no socket: ${JSON.stringify(socket.body)}`)

  t.ok((await fetched(host.url, `http://127.0.0.1:${unlisted.port}/metrics`)).error, 'a host not in allowed_outbound_hosts is refused')
  t.ok((await fetched(host.url, `http://localhost:${allowedByName.port}/`)).error, 'an allowed name that resolves to loopback is refused')
  t.ok((await fetched(host.url, `http://127.0.0.1:${literal.port}/`)).error, 'an allowed loopback address is refused')
  t.equal(unlisted.hits() + allowedByName.hits() + literal.hits() + socketTarget.hits(), 0, 'no connection reached any listener')
  const output = await host.output()
  t.match(output, /"msg":"outgoing request refused"[^\n]*"reason":"not in allowed_outbound_hosts"/)
  t.match(output, /"msg":"outgoing request refused"[^\n]*"reason":"resolves only to internal addresses"/)
  t.notMatch(output, /\/metrics/, 'the refused URL path is not logged')

  const exited = await fetch(`${host.url}/?probe=exit`)
  t.equal(exited.status, 500, 'exit fails the request')
  await exited.body?.cancel()
  t.same(await ask(host.url, { probe: 'directories' }), { status: 200, body: { paths: [] } }, 'and the worker goes on answering')

  // The operator opens loopback (both families: localhost may resolve to ::1 too): the listed
  // hosts are reached, an unlisted one still is not.
  const open = await serve(t, ref, { allowPrivateOutbound: ['127.0.0.0/8', '::1/128'] })
  t.same(await fetched(open.url, `http://localhost:${allowedByName.port}/`), { status: 200, body: 'reached' }, 'an allowed name in an allowed range')
  t.same(await fetched(open.url, `http://127.0.0.1:${literal.port}/`), { status: 200, body: 'reached' }, 'an allowed address in an allowed range')
  t.ok((await fetched(open.url, `http://127.0.0.1:${unlisted.port}/`)).error, 'still only allowed_outbound_hosts')
  t.equal(unlisted.hits(), 0)
})

t.test('a request that never returns: 504 at the deadline, and the worker answers others throughout', async (t) => {
  const root = t.testdir({ image: {} })
  await pushSpinApp(layoutStore(join(root, 'image')), 'v1', {
    lockedApp: {
      spin_lock_version: 1,
      triggers: [{ id: 'probe-http-trigger', trigger_type: 'http', trigger_config: { component: 'probe', route: '/...' } }],
      components: [{ id: 'probe', source: { content_type: 'application/wasm', source: 'file:///probe.wasm' } }],
    },
    wasm: new Map([['probe', await probeComponent(t)]]),
  })
  const host = await serve(t, `oci-layout:${join(root, 'image')}:v1`, { limits: { requestTimeoutMs: 1000 } })
  // More spinning requests than cores, at once.
  const spinning = [1, 2, 3].map(async () => (await fetch(`${host.url}/?probe=spin`)).status)
  t.same(await ask(host.url, { probe: 'directories' }), { status: 200, body: { paths: [] } }, 'another request is answered meanwhile')
  t.same(await Promise.all(spinning), [504, 504, 504], 'each ends at its deadline')
  t.same(await ask(host.url, { probe: 'directories' }), { status: 200, body: { paths: [] } }, 'and the worker goes on')
  t.match(await host.output(), /"msg":"the instance was stopped"[^\n]*"reason":"deadline"/, 'the log says why')
})
