// `npm run test:images`: proves that Dockerfile.relay, Dockerfile.control and
// builders/Dockerfile.{js,go,rust} build and run. Arguments pick some of them (`npm run
// test:images -- builder-js builder-rust`); none runs them all.
//
// 1. Installs podman and debootstrap with apt when they are missing (this needs root).
// 2. Makes (or finds cached) a local stand-in for node:24-trixie-slim (image-base.ts).
// 3. Builds both images with `podman build --isolation=chroot` on that base.
// 4. Runs each image's entrypoint in its own read-only root as its USER (image-root.ts) and
//    checks it from outside: /healthz, the image's HEALTHCHECK, a session round trip through
//    the relay, the control plane on embedded PGlite in its volume and the worker it carries
//    (its Rust stage replaced by the checkout's build: no Rust image here), a clean exit on SIGTERM,
//    the uid it really runs as, and what the image holds: no dev dependencies, tests, sources,
//    benchmarks or scripts.
// 5. Runs the relay's test files inside the relay image's root on its Node 24 (the checkout
//    bound into it), so every change is tested on both supported runtimes: Node 22 in
//    `npm test`, Node 24 here. And runs the relay on this host with the image's Node 24: on a
//    glibc older than 2.38 (Debian 12) it must refuse with exit 2 and one line naming it.
//
// 6. Runs the js builder image's entrypoint on the template's source, pushing to a registry on
//    loopback, and checks what it pushed as the shim would (image-builder.ts); the same for the
//    go and rust builder images, served by the wasmtime worker (image-builder-compiled.ts).
//
// Prints one line per check and ends with "N passed, M failed"; exits 1 on any failure.
// Every mount and process it made is undone on every exit path, signals included.
import { execFileSync, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { basename, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import WebSocket from 'ws'
import { ensureBaseImage, NODE_ABI, NODE_VERSION } from './image-base.js'
import { largest } from './image-build-run.js'
import { testBuilderImage } from './image-builder.js'
import { testCompiledBuilderImage } from './image-builder-compiled.js'
import { commandExists, killRunning, podmanOn, removeDir, run, undoStack } from './image-host.js'
import type { Podman, UndoStack } from './image-host.js'
import { bindInto, imageEnv, inspectImage, mountImageRoot, numericUser, startInRoot } from './image-root.js'
import type { ImageConfig, ImageRoot, Started } from './image-root.js'

const repo = fileURLToPath(new URL('../..', import.meta.url))
const cacheDir = join(repo, '.cache', 'test-images')
// The base carries Node 24, so this is the one binary the relay image keeps.
const UWS_BINARY = `uws_linux_${process.arch}_${NODE_ABI}.node`
const SUITE_TIMEOUT_MS = 15 * 60_000
const START_TIMEOUT_MS = 60_000
const EXIT_TIMEOUT_MS = 10_000

type Owner = { uid: number; gid: number }
type Exercise = (running: Running) => Promise<void>
type Running = { port: number; root: ImageRoot; config: ImageConfig; owner: Owner; process: Started; undo: UndoStack }

type ImageSpec = {
  name: string
  dockerfile: string
  /** The setting that holds the listen address, moved to a free loopback port. */
  addressVariable: string
  /** Settings for the smoke run: no identity provider can run inside the root. */
  env: (port: number) => Record<string, string>
  /** Paths under /app that must be there, and ones that belong to the other image. */
  present: string[]
  /** Named build contexts (`--build-context name=dir`), made before the build. */
  buildContexts?: (workDir: string) => Record<string, string>
  absent: string[]
  exercise: Exercise
}

const IMAGES: ImageSpec[] = [
  {
    name: 'relay',
    dockerfile: 'Dockerfile.relay',
    addressVariable: 'RELAY_ADDR',
    // A 1 s drain: SIGTERM then ends an open session with 1001 within the exit wait.
    env: (port) => ({
      RELAY_NO_AUTH: 'true',
      RELAY_PUBLIC_BASE_URL: `ws://127.0.0.1:${port}`,
      RELAY_DRAIN_TIMEOUT: '1s',
    }),
    present: ['relay/dist/main.js', 'relay/dist/healthcheck.js', `node_modules/uWebSockets.js/${UWS_BINARY}`],
    absent: [
      'control',
      'spin',
      'builders',
      'host',
      'dist',
      ...['fastify', '@electric-sql/pglite', 'pg', '@kubernetes/client-node', 'prom-client'].map(
        (name) => `node_modules/${name}`,
      ),
    ],
    exercise: exerciseRelay,
  },
  {
    name: 'control',
    dockerfile: 'Dockerfile.control',
    addressVariable: 'PLATFORM_ADDR',
    env: () => ({ PLATFORM_DEV_INSECURE_SKIP_AUTH: 'true' }),
    present: [
      'control/dist/main.js',
      'control/dist/healthcheck.js',
      'spin/templates/js',
      'dist/console/index.html',
      'node_modules/@electric-sql/pglite',
      'bin/worker',
    ],
    // The worker stage is the checkout's cargo build (npm run build made it): its own cargo build
    // would take 10-15 minutes of two cores, and its Rust image cannot be pulled here.
    buildContexts: (workDir) => ({ worker: builtWorker(workDir) }),
    // The wasm toolchain too: builds run in Jobs with the builder images (builders/).
    absent: [
      'relay',
      'builders',
      'host',
      'dist/scripts',
      'dist/bench',
      ...[
        'uWebSockets.js',
        '@spinframework/build-tools',
        '@bytecodealliance/componentize-js',
        '@bytecodealliance/jco',
        'binaryen',
        'esbuild',
      ].map((name) => `node_modules/${name}`),
    ],
    exercise: exerciseControl,
  },
]

// Names the issue calls out, checked by name on top of every dev-only entry in the lockfile.
// Not ws or @types/node: the Kubernetes client depends on both at run time.
const DEV_TOOLS = ['tap', 'typescript', 'oidc-provider', 'autocannon']

let passed = 0
let failed = 0

function check(ok: boolean, what: string, detail?: unknown): boolean {
  if (ok) passed++
  else failed++
  console.log(
    `${ok ? 'ok' : 'not ok'} - ${what}${ok || detail === undefined ? '' : `: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`}`,
  )
  return ok
}

function log(line: string): void {
  console.log(`# ${line}`)
}

async function timed<T>(what: string, step: () => Promise<T>): Promise<T> {
  const started = Date.now()
  const result = await step()
  log(`${what}: ${((Date.now() - started) / 1000).toFixed(1)} s`)
  return result
}

async function ensureTools(): Promise<void> {
  const missing = [
    ['podman', 'podman'],
    ['debootstrap', 'debootstrap'],
  ]
    .filter(([command]) => !commandExists(command!))
    .map(([, pkg]) => pkg!)
  if (missing.length === 0) return
  log(`installing ${missing.join(', ')} with apt`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  const logFile = join(cacheDir, 'logs', 'apt.log')
  // Others may hold apt's lock for a while (CI installs more than this).
  const lock = ['-o', 'DPkg::Lock::Timeout=600']
  await run('apt-get', [...lock, 'update', '-qq'], { env, logFile })
  await run('apt-get', [...lock, 'install', '-y', '-qq', ...missing], { env, logFile })
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0))
    })
  })
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

async function waitForHealth(port: number, started: Started): Promise<Response> {
  const deadline = Date.now() + START_TIMEOUT_MS
  let exited = false
  void started.exited.then(() => {
    exited = true
  })
  for (;;) {
    if (exited)
      throw new Error(
        `exited before serving /healthz; stderr: ${started.stderr().slice(-2_000)} stdout: ${started.stdout().slice(-2_000)}`,
      )
    try {
      const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) })
      if (response.status === 200) return response
    } catch {}
    if (Date.now() > deadline)
      throw new Error(`no 200 from /healthz within ${START_TIMEOUT_MS} ms; stderr: ${started.stderr().slice(-2_000)}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

/** The image's HEALTHCHECK, run in its root as its user with the same environment. */
async function healthcheck(running: Running, env: string[]): Promise<number | null> {
  const [kind, ...rest] = running.config.healthcheck
  const argv = kind === 'CMD-SHELL' ? ['/bin/sh', '-c', rest.join(' ')] : rest
  const probe = startInRoot(running.root, running.config, running.owner, argv, env, running.undo)
  return (await withTimeout(probe.exited, 15_000, 'the HEALTHCHECK command')).code
}

function processIds(pid: number): { uid: string; gid: string; groups: string } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const field = (name: string): string => (new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status)?.[1] ?? '').trim()
  return { uid: field('Uid'), gid: field('Gid'), groups: field('Groups') }
}

// Every file under /app outside node_modules, relative to /app.
function appFiles(dir: string, base = dir): string[] {
  const files: string[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (relative(base, path) !== 'node_modules') files.push(...appFiles(path, base))
    } else {
      files.push(relative(base, path))
    }
  }
  return files
}

function checkContents(spec: ImageSpec, root: ImageRoot, config: ImageConfig): void {
  const app = join(root.dir, config.workingDir)
  const lock = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean }>
  }
  const devOnly = Object.entries(lock.packages)
    .filter(([path, entry]) => path !== '' && entry.dev === true)
    .map(([path]) => path)
  const devPresent = devOnly.filter((path) => existsSync(join(app, path)))
  check(
    devOnly.length > 0 && devPresent.length === 0,
    `${spec.name}: none of the lockfile's ${devOnly.length} dev-only packages in node_modules`,
    devPresent.slice(0, 20),
  )
  const toolsPresent = DEV_TOOLS.filter((name) => existsSync(join(app, 'node_modules', name)))
  check(toolsPresent.length === 0, `${spec.name}: no ${DEV_TOOLS.join(', ')}`, toolsPresent)
  check(
    !existsSync(join(app, 'node_modules', '.bin', 'tsc')) && !existsSync(join(app, 'node_modules', '.bin', 'tap')),
    `${spec.name}: no tsc or tap in node_modules/.bin`,
  )

  const files = appFiles(app)
  // spin/templates/ is data: the hello-world sources new functions start with.
  const sources = files.filter(
    (file) =>
      !file.startsWith('spin/templates/') && (/\.(ts|mts|cts|tsx)$/.test(file) || /^tsconfig.*\.json$/.test(file)),
  )
  check(
    sources.length === 0,
    `${spec.name}: no TypeScript sources or tsconfig outside node_modules`,
    sources.slice(0, 20),
  )
  const unneeded = files.filter(
    (file) =>
      /^(test|bench|scripts|\.ci|\.git|deploy|coverage|data|\.cache)\//.test(file) ||
      /(^|\/)(Dockerfile[^/]*|package-lock\.json|README\.md|\.env)$/.test(file),
  )
  check(
    unneeded.length === 0,
    `${spec.name}: no tests, benchmarks, scripts, lockfile or docs in ${config.workingDir}`,
    unneeded.slice(0, 20),
  )
  const missing = spec.present.filter((path) => !existsSync(join(app, path)))
  check(missing.length === 0, `${spec.name}: holds ${spec.present.join(', ')}`, missing)
  const extra = spec.absent.filter((path) => existsSync(join(app, path)))
  check(extra.length === 0, `${spec.name}: none of ${spec.absent.join(', ')}`, extra)
  if (spec.name === 'relay') {
    const binaries = readdirSync(join(app, 'node_modules', 'uWebSockets.js'), {
      recursive: true,
      encoding: 'utf8',
    }).filter((file) => file.endsWith('.node'))
    check(
      binaries.length === 1 && binaries[0]!.endsWith(UWS_BINARY),
      `relay: the one uWebSockets.js binary its node loads (${UWS_BINARY}), not every platform's`,
      binaries,
    )
  }
  const main = statSync(join(app, spec.present[0]!))
  check(
    main.uid === 0 && (main.mode & 0o022) === 0,
    `${spec.name}: its code belongs to root and is not writable by the runtime user`,
    { uid: main.uid, mode: (main.mode & 0o777).toString(8) },
  )
}

/** A directory holding the checkout's worker binary as `worker`, what Dockerfile.control's worker stage makes. */
function builtWorker(workDir: string): string {
  const dir = join(workDir, 'worker-context')
  mkdirSync(dir, { recursive: true })
  copyFileSync(join(repo, '.cache', 'worker', 'target', 'release', 'worker'), join(dir, 'worker'))
  return dir
}

async function testImage(
  spec: ImageSpec,
  podman: Podman,
  baseImage: string,
  workDir: string,
  parentUndo: UndoStack,
): Promise<void> {
  const tag = `localhost/session-relay/${spec.name}:test`
  const contexts = Object.entries(spec.buildContexts?.(workDir) ?? {}).flatMap(([name, dir]) => [
    '--build-context',
    `${name}=${dir}`,
  ])
  await timed(`build ${spec.name}`, () =>
    podman(
      [
        'build',
        '--isolation=chroot',
        '--format=docker',
        '--pull=never',
        ...contexts,
        '--build-arg',
        `BASE_IMAGE=${baseImage}`,
        '-f',
        spec.dockerfile,
        '-t',
        tag,
        '.',
      ],
      { cwd: repo, logFile: join(cacheDir, 'logs', `build-${spec.name}.log`) },
    ),
  )
  check(true, `${spec.name}: podman build --isolation=chroot -f ${spec.dockerfile}`)

  const config = await inspectImage(podman, tag)
  log(
    `${spec.name}: ${(config.size / 1024 / 1024).toFixed(0)} MiB, USER ${config.user}, WORKDIR ${config.workingDir}, ENTRYPOINT ${JSON.stringify(config.entrypoint)}, VOLUME ${JSON.stringify(config.volumes)}`,
  )
  const owner = numericUser(config.user)
  if (
    !check(
      owner !== null && owner.uid !== 0 && owner.gid !== 0,
      `${spec.name}: USER is a numeric non-root uid:gid (runAsNonRoot can verify it)`,
      config.user,
    )
  )
    return
  check(
    config.healthcheck[0] === 'CMD' || config.healthcheck[0] === 'CMD-SHELL',
    `${spec.name}: declares a HEALTHCHECK`,
    config.healthcheck,
  )

  const undo = parentUndo.nested(`${spec.name}: mounts and processes`)
  try {
    const root = await mountImageRoot(podman, tag, config, owner!, workDir, undo)
    checkContents(spec, root, config)
    await largest({ log }, join(root.dir, config.workingDir, 'node_modules'), `${spec.name}: node_modules`)

    const port = await freePort()
    const env = imageEnv(config, { [spec.addressVariable]: `127.0.0.1:${port}`, ...spec.env(port) })
    const started = startInRoot(root, config, owner!, [...config.entrypoint, ...config.cmd], env, undo)
    const running: Running = { port, root, config, owner: owner!, process: started, undo }

    const health = await timed(`${spec.name}: start until /healthz answers`, () => waitForHealth(port, started))
    check(
      health.status === 200 && (await health.text()) === 'ok',
      `${spec.name}: entrypoint started in a read-only root; GET /healthz 200 ok`,
    )
    const ids = processIds(started.pid)
    const expected = String(owner!.uid)
    check(
      ids.uid.split(/\s+/).every((id) => id === expected) &&
        ids.gid.split(/\s+/).every((id) => id === String(owner!.gid)),
      `${spec.name}: the process runs as uid ${owner!.uid} gid ${owner!.gid}, not root`,
      ids,
    )
    check((await healthcheck(running, env)) === 0, `${spec.name}: the image's HEALTHCHECK passes while it serves`)

    await spec.exercise(running)

    check((await healthcheck(running, env)) !== 0, `${spec.name}: the HEALTHCHECK fails once the process has stopped`)
    const lines = started
      .stdout()
      .split('\n')
      .filter((line) => line !== '')
    check(
      lines.length > 0 &&
        lines.every((line) => {
          try {
            JSON.parse(line)
            return true
          } catch {
            return false
          }
        }),
      `${spec.name}: logs are JSON lines on stdout`,
      lines.slice(0, 3),
    )
    check(started.stderr() === '', `${spec.name}: nothing on stderr`, started.stderr().slice(0, 500))
    if (spec.name === 'relay') {
      await timed("relay: its test files on the image's Node 24", () => relaySuiteInRoot(root, config, undo))
      await refusalOnThisHost(root)
    }
  } finally {
    const failures = undo.unwind()
    check(failures.length === 0, `${spec.name}: every mount and process undone`, failures)
  }
}

// The relay's test files, run by tap on the image's node as root in the image's root, with
// this checkout (its node_modules hold every uWebSockets.js binary; dist/ is built) bound at
// /tmp/src. tap starts each file with its own process.execPath: Node 24 throughout.
async function relaySuiteInRoot(root: ImageRoot, config: ImageConfig, undo: UndoStack): Promise<void> {
  const inside = '/tmp/src'
  bindInto(root, repo, inside, undo)
  // test/common minus what needs a host program the root lacks and the relay never runs:
  // the browser helper (Chromium) and the Spin artifact code (a docker-registry), which are
  // the console's and the builders' and run in `npm test`.
  const hostOnly = /^(browser|spin-[\w-]+)\.test\.ts$/
  const files = ['test/relay', 'test/common'].flatMap((dir) =>
    readdirSync(join(repo, dir))
      .filter((file) => file.endsWith('.test.ts') && !(dir === 'test/common' && hostOnly.test(file)))
      .map((file) => `${dir}/${file}`),
  )
  lendOpenssl(root)
  const env = imageEnv(config, {
    NODE_ENV: 'test',
    HOME: '/tmp',
    PATH: `${TOOLS}/bin:/usr/local/bin:/usr/bin:/bin`,
    OPENSSL_CONF: `${TOOLS}/openssl.cnf`,
    CI: 'true',
  })
  const suite = startInRoot(
    root,
    { ...config, workingDir: inside },
    { uid: 0, gid: 0 },
    ['node', '-e', 'console.log(`# node ${process.version}`)'],
    env,
    undo,
  )
  const version = await withTimeout(suite.exited, 30_000, 'node --version in the root')
  const shown = suite.stdout().trim()
  check(
    version.code === 0 && shown === `# node v${NODE_VERSION}`,
    `relay root: node is v${NODE_VERSION}`,
    shown + suite.stderr(),
  )
  const tap = startInRoot(
    root,
    { ...config, workingDir: inside },
    { uid: 0, gid: 0 },
    ['node', 'node_modules/tap/dist/esm/run.mjs', '-j2', '--reporter=terse', ...files],
    env,
    undo,
  )
  const exit = await withTimeout(tap.exited, SUITE_TIMEOUT_MS, "the relay's tests in the image root")
  const output = tap.stdout() + tap.stderr()
  writeFileSync(join(cacheDir, 'logs', 'relay-tests-node24.log'), output)
  check(
    exit.code === 0,
    `relay: its ${files.length} test files pass on Node ${NODE_VERSION} in the image's root`,
    `exit ${exit.code}; see ${relative(repo, join(cacheDir, 'logs', 'relay-tests-node24.log'))}: ${output.slice(-1_500)}`,
  )
}

// The TLS tests make their certificate with the openssl CLI, which a slim image rightly lacks:
// the host's is lent for the test run, with the libraries it links beside it (the root's glibc
// is newer than the host's, so the host's binary runs there), in the root's scratch /tmp.
const TOOLS = '/tmp/tools'
function lendOpenssl(root: ImageRoot): void {
  const tools = join(root.dir, TOOLS)
  mkdirSync(join(tools, 'bin'), { recursive: true })
  mkdirSync(join(tools, 'lib'), { recursive: true })
  const openssl = runSyncText('sh', ['-c', 'command -v openssl']).trim()
  copyFileSync(openssl, join(tools, 'lib', 'openssl'))
  chmodSync(join(tools, 'lib', 'openssl'), 0o755)
  for (const line of runSyncText('ldd', [openssl]).split('\n')) {
    const library = /=>\s+(\S+\/(?:libssl|libcrypto|libz)[^\s/]*)\s/.exec(line)?.[1]
    if (library !== undefined) copyFileSync(library, join(tools, 'lib', basename(library)))
  }
  const conf = ['/usr/lib/ssl/openssl.cnf', '/etc/ssl/openssl.cnf'].find((file) => existsSync(file))
  writeFileSync(join(tools, 'openssl.cnf'), conf === undefined ? '' : readFileSync(conf))
  writeFileSync(
    join(tools, 'bin', 'openssl'),
    `#!/bin/sh\nLD_LIBRARY_PATH=${TOOLS}/lib exec ${TOOLS}/lib/openssl "$@"\n`,
    { mode: 0o755 },
  )
}

function runSyncText(command: string, args: string[]): string {
  return execFileSync(command, args, { encoding: 'utf8' })
}

// The image's Node 24 on this host: its uWebSockets.js binary needs glibc 2.38. Where the host
// has less, the relay must refuse as docs/relay.md says: exit 2, one line, the image named.
async function refusalOnThisHost(root: ImageRoot): Promise<void> {
  const glibc = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header
    ?.glibcVersionRuntime
  const [major = 0, minor = 0] = (glibc ?? '0.0').split('.').map(Number)
  if (glibc === undefined || major > 2 || minor >= 38) {
    log(`relay on this host's glibc ${glibc ?? 'none'} with Node 24: loads, no refusal to check`)
    return
  }
  const node24 = join(root.dir, 'usr', 'local', 'bin', 'node')
  const result = await runCapture(node24, [
    join(repo, 'relay', 'dist', 'main.js'),
    '--no-auth',
    '--addr',
    '127.0.0.1:0',
  ])
  const lines = result.stderr.split('\n').filter((line) => line !== '')
  check(
    result.code === 2 &&
      lines.length === 1 &&
      lines[0]!.includes('needs glibc 2.38') &&
      lines[0]!.includes(`this host has glibc ${glibc}`) &&
      lines[0]!.includes('relay image'),
    `relay on this host (glibc ${glibc}) with Node ${NODE_VERSION}: exit 2, one line naming glibc 2.38 and the image`,
    { code: result.code, stderr: result.stderr.slice(0, 500) },
  )
}

function runCapture(command: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, stderr }))
  })
}

async function stopWithSigterm(running: Running, what: string): Promise<void> {
  running.process.child.kill('SIGTERM')
  const exit = await withTimeout(running.process.exited, EXIT_TIMEOUT_MS, `${what} to exit after SIGTERM`)
  check(exit.code === 0, `${what}: SIGTERM exits 0 within ${EXIT_TIMEOUT_MS / 1000} s`, exit)
}

type Peer = {
  socket: WebSocket
  messages: Array<{ data: Buffer; binary: boolean }>
  closed: Promise<{ code: number; reason: string }>
}

async function attach(url: string, headers: Record<string, string> = {}): Promise<Peer> {
  const socket = new WebSocket(url, { headers })
  const messages: Peer['messages'] = []
  socket.on('message', (data, binary) => messages.push({ data: Buffer.from(data as Buffer), binary }))
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() }))
  })
  await withTimeout(
    new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve())
      socket.once('error', reject)
    }),
    5_000,
    `attach to ${url.replace(/token=[^&]*/, 'token=...')}`,
  )
  return { socket, messages, closed }
}

async function received(peer: Peer, count: number): Promise<void> {
  const deadline = Date.now() + 5_000
  while (peer.messages.length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
}

type Created = {
  id: string
  initiator_token: string
  responder_token: string
  initiator_url?: string
  responder_url?: string
}

async function createSession(port: number): Promise<Created> {
  const response = await fetch(`http://127.0.0.1:${port}/admin/sessions`, { method: 'POST' })
  if (response.status !== 201)
    throw new Error(`POST /admin/sessions answered ${response.status}: ${await response.text()}`)
  return (await response.json()) as Created
}

async function exerciseRelay(running: Running): Promise<void> {
  const { port } = running
  const session = await createSession(port)
  check(
    session.initiator_url === `ws://127.0.0.1:${port}/relay/${session.id}` &&
      session.responder_url === session.initiator_url,
    "relay: POST /admin/sessions 201, URLs on the node's own public base URL",
    session.initiator_url,
  )
  const initiator = await attach(session.initiator_url!, { authorization: `Bearer ${session.initiator_token}` })
  const responder = await attach(`${session.responder_url!}?token=${session.responder_token}`)
  initiator.socket.send('hello from the initiator')
  responder.socket.send(Buffer.from([0, 1, 2, 255]))
  await received(responder, 1)
  await received(initiator, 1)
  check(
    responder.messages[0]?.data.toString() === 'hello from the initiator' && responder.messages[0]?.binary === false,
    'relay: a text message from initiator to responder',
    responder.messages,
  )
  check(
    initiator.messages[0]?.binary === true && initiator.messages[0]?.data.equals(Buffer.from([0, 1, 2, 255])),
    'relay: a binary message from responder to initiator',
    initiator.messages,
  )
  const state = (await (await fetch(`http://127.0.0.1:${port}/admin/sessions/${session.id}`)).json()) as {
    state?: string
    bytes_in?: number
  }
  check(state.state === 'open' && state.bytes_in === 28, 'relay: the session is open with its bytes counted', state)
  initiator.socket.close(1000, 'done')
  const responderClosed = await withTimeout(responder.closed, 5_000, 'the responder to be closed')
  check(responderClosed.code === 1000, 'relay: a close from one peer reaches the other', responderClosed)

  // Shutdown as Kubernetes does it: SIGTERM drains, and at the drain timeout what is left gets 1001.
  const second = await createSession(port)
  const peers = [
    await attach(`${second.initiator_url!}?token=${second.initiator_token}`),
    await attach(`${second.responder_url!}?token=${second.responder_token}`),
  ]
  await stopWithSigterm(running, 'relay')
  const closes = await Promise.all(
    peers.map((peer) => withTimeout(peer.closed, 5_000, 'a peer to be closed on shutdown')),
  )
  check(
    closes.every((close) => close.code === 1001),
    'relay: on SIGTERM both peers of an open session get 1001 at the drain timeout',
    closes,
  )
  const logText = running.process.stdout()
  check(
    ![session, second].some((s) => logText.includes(s.initiator_token) || logText.includes(s.responder_token)),
    'relay: no slot token in the logs',
  )
}

async function exerciseControl(running: Running): Promise<void> {
  const api = `http://127.0.0.1:${running.port}/api/v1`
  const name = `smoke-${createHash('sha256').update(String(Date.now())).digest('hex').slice(0, 8)}`
  const created = await fetch(`${api}/applications`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, language: 'go', runtime: 'wasmkube' }),
  })
  check(
    created.status === 201,
    'control: POST /api/v1/applications 201 on embedded PGlite',
    `${created.status} ${await created.clone().text()}`,
  )
  // No cluster here: the local runtime, which has no js toolchain in this image, says so.
  const script = (await (
    await fetch(`${api}/applications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: `${name}-js`, language: 'js', runtime: 'wasmkube' }),
    })
  ).json()) as { id: string }
  const build = await fetch(`${api}/applications/${script.id}/builds`, { method: 'POST' })
  const refusal = await build.text()
  check(
    build.status === 503 &&
      refusal.includes(
        'js builds need the js toolchain: @spinframework/build-tools and esbuild are not installed here',
      ),
    'control: a js build answers 503 naming the toolchain the image leaves out',
    `${build.status} ${refusal}`,
  )
  const [volume, hostDir] = [...running.root.volumes][0] ?? []
  const stored = hostDir === undefined ? [] : readdirSync(hostDir)
  const foreign = stored.filter((file) => statSync(join(hostDir!, file)).uid !== running.owner.uid)
  check(
    volume !== undefined && stored.length > 0 && foreign.length === 0,
    `control: the database is in the declared volume ${volume}, written as uid ${running.owner.uid}`,
    { stored, foreign },
  )

  // The worker the local runtime starts (PLATFORM_LOCAL_WORKER): it runs in the image's root as
  // its user, compiled cache in the volume; stdin closed, it exits 0 (worker/README.md).
  const workerPath =
    running.config.env
      .find((entry) => entry.startsWith('PLATFORM_LOCAL_WORKER='))
      ?.slice('PLATFORM_LOCAL_WORKER='.length) ?? ''
  const worker = startInRoot(
    running.root,
    running.config,
    running.owner,
    [workerPath, '--cache-dir', `${volume ?? '/data'}/worker-check`],
    [],
    running.undo,
  )
  const ended = await worker.exited
  check(
    workerPath !== '' && ended.code === 0 && worker.stderr().includes('"worker ready"'),
    `control: the worker ${workerPath} starts in the image as uid ${running.owner.uid} and exits when its parent goes`,
    { ...ended, stderr: worker.stderr().slice(0, 400) },
  )
  await stopWithSigterm(running, 'control')

  // The same volume under a new process: what a pod restart with a persistent volume sees.
  const env = imageEnv(running.config, {
    PLATFORM_ADDR: `127.0.0.1:${running.port}`,
    PLATFORM_DEV_INSECURE_SKIP_AUTH: 'true',
  })
  const again = startInRoot(
    running.root,
    running.config,
    running.owner,
    [...running.config.entrypoint, ...running.config.cmd],
    env,
    running.undo,
  )
  await waitForHealth(running.port, again)
  const list = (await (await fetch(`${api}/applications`)).json()) as Array<{ name: string }>
  check(
    list.some((app) => app.name === name),
    'control: a restart on the same volume still has the application',
    list,
  )
  await stopWithSigterm({ ...running, process: again }, 'control after the restart')
}

async function main(): Promise<number> {
  if (process.getuid?.() !== 0) {
    console.error('test:images: needs root (apt, mounts, chroot); CI runs as root')
    return 2
  }
  const started = Date.now()
  mkdirSync(join(cacheDir, 'logs'), { recursive: true })
  const workDir = mkdtempSync(join(tmpdir(), 'test-images-'))
  const undo = undoStack()
  undo.push(`rm ${workDir}`, () => removeDir(workDir))
  const interrupt = (signal: NodeJS.Signals): void => {
    log(`${signal}: cleaning up`)
    killRunning()
    cleanupFailures.push(...undo.unwind())
    process.exit(signal === 'SIGINT' ? 130 : 143)
  }
  const cleanupFailures: string[] = []
  process.once('SIGINT', interrupt)
  process.once('SIGTERM', interrupt)
  try {
    await timed('tools', ensureTools)
    const podman = podmanOn(join(cacheDir, 'storage'), join(cacheDir, 'run'))
    const baseImage = await timed('base image', () => ensureBaseImage(podman, cacheDir, workDir, undo, log))
    const chosen = process.argv.slice(2)
    const builders = ['builder-js', 'builder-go', 'builder-rust']
    const unknown = chosen.filter((name) => !builders.includes(name) && !IMAGES.some((spec) => spec.name === name))
    if (unknown.length > 0)
      throw new Error(
        `unknown image ${unknown.join(', ')}: expected ${[...IMAGES.map((spec) => spec.name), ...builders].join(', ')}`,
      )
    const wanted = (name: string): boolean => chosen.length === 0 || chosen.includes(name)
    for (const spec of IMAGES.filter((spec) => wanted(spec.name))) {
      try {
        await testImage(spec, podman, baseImage, workDir, undo)
      } catch (error) {
        check(false, `${spec.name}: ${(error as Error).message}`)
      }
    }
    if (wanted('builder-js')) {
      try {
        await testBuilderImage(
          { repo, cacheDir, podman, baseImage, workDir, check, log, timed, freePort, withTimeout },
          undo,
        )
      } catch (error) {
        check(false, `builder-js: ${(error as Error).message}`)
      }
    }
    for (const language of ['go', 'rust'] as const) {
      if (!wanted(`builder-${language}`)) continue
      try {
        await testCompiledBuilderImage(
          language,
          { repo, cacheDir, podman, baseImage, workDir, check, log, timed, freePort, withTimeout },
          undo,
        )
      } catch (error) {
        check(false, `builder-${language}: ${(error as Error).message}`)
      }
    }
  } catch (error) {
    check(false, (error as Error).message)
  } finally {
    cleanupFailures.push(...undo.unwind())
  }
  for (const failure of cleanupFailures) check(false, `cleanup: ${failure}`)
  log(`total: ${((Date.now() - started) / 1000).toFixed(1)} s; cache in ${relative(repo, cacheDir)}`)
  console.log(`${passed} passed, ${failed} failed`)
  return failed === 0 && passed > 0 ? 0 : 1
}

process.exitCode = await main()
