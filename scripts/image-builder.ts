// The js builder image in `npm run test:images`: built from builders/Dockerfile.js, then its
// entrypoint run in its read-only root as its USER, as a build Job runs it: the template's
// source archive in, a real registry on loopback (Debian's docker-registry) out. What it
// pushed is pulled back and checked as containerd-shim-spin would (spin/src), then
// served by the wasmtime worker on this machine, so the component the image made really answers.
// A source with a syntax error must fail there with exit 1 and the line in the termination log.
// The go and rust images are built and run by image-builder-compiled.ts, with runBuild.
import { spawn } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pullSpinApp } from '@session-relay/spin/artifact'
import { LOCKED_APP_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE } from '@session-relay/spin/format'
import type { LockedApp } from '@session-relay/spin/format'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import { templateFiles } from '@session-relay/spin/templates'
import type { Language } from '@session-relay/spin/languages'
import { spinManifest } from '@session-relay/spin/manifest'
import { packArchive } from '@session-relay/spin/source/archive'
import { removeDir, run } from './image-host.js'
import type { Podman, UndoStack } from './image-host.js'
import { bindInto, imageEnv, inspectImage, mountImageRoot, numericUser, startInRoot } from './image-root.js'
import type { ImageConfig, ImageRoot } from './image-root.js'

export type Suite = {
  repo: string
  cacheDir: string
  podman: Podman
  baseImage: string
  workDir: string
  check: (ok: boolean, what: string, detail?: unknown) => boolean
  log: (line: string) => void
  timed: <T>(what: string, step: () => Promise<T>) => Promise<T>
  freePort: () => Promise<number>
  withTimeout: <T>(promise: Promise<T>, ms: number, what: string) => Promise<T>
}

const TAG = 'localhost/session-relay/builder-js:test'
// A j2w build takes 6-25 s on a quiet machine; CI's is shared.
const BUILD_TIMEOUT_MS = 5 * 60_000
const FUNCTION = 'smoke'
// The one test/helpers/registry.ts starts, by the same variable.
const REGISTRY_BINARY = process.env.DOCKER_REGISTRY_BIN ?? 'docker-registry'
// Packages only the relay or the control plane load: a builder image carrying them is bloated.
const FOREIGN = [
  'uWebSockets.js',
  'fastify',
  '@electric-sql/pglite',
  'pg',
  '@kubernetes/client-node',
  'prom-client',
  'jose',
  'pino',
  'tap',
  'typescript',
  '@bytecodealliance/jco-transpile',
]

export async function testBuilderImage(suite: Suite, parentUndo: UndoStack): Promise<void> {
  const { check, log, podman } = suite
  await suite.timed('build builder-js', () =>
    podman(
      [
        'build',
        '--isolation=chroot',
        '--format=docker',
        '--pull=never',
        '--build-arg',
        `BASE_IMAGE=${suite.baseImage}`,
        '-f',
        'builders/Dockerfile.js',
        '-t',
        TAG,
        '.',
      ],
      { cwd: suite.repo, logFile: join(suite.cacheDir, 'logs', 'build-builder-js.log') },
    ),
  )
  check(true, 'builder-js: podman build --isolation=chroot -f builders/Dockerfile.js')

  const config = await inspectImage(podman, TAG)
  log(
    `builder-js: ${(config.size / 1024 / 1024).toFixed(0)} MiB, USER ${config.user}, ENTRYPOINT ${JSON.stringify(config.entrypoint)}`,
  )
  const owner = numericUser(config.user)
  if (
    !check(
      owner !== null && owner.uid !== 0 && owner.gid !== 0,
      'builder-js: USER is a numeric non-root uid:gid',
      config.user,
    )
  )
    return
  check(
    JSON.stringify(config.entrypoint) === JSON.stringify(['node', 'builders/dist/main.js']),
    'builder-js: ENTRYPOINT is the builder program, exec form',
    config.entrypoint,
  )

  const undo = parentUndo.nested('builder-js: mounts and processes')
  try {
    const root = await mountImageRoot(podman, TAG, config, owner!, suite.workDir, undo)
    checkContents(suite, root, config)
    await largest(suite, join(root.dir, config.workingDir, 'node_modules'), 'builder-js: node_modules')
    const registry = await startRegistry(suite, undo)
    await buildTemplate(suite, root, config, owner!, registry, undo)
    await buildSyntaxError(suite, root, config, owner!, registry, undo)
  } finally {
    const failures = undo.unwind()
    check(failures.length === 0, 'builder-js: every mount and process undone', failures)
  }
}

function checkContents(suite: Suite, root: ImageRoot, config: ImageConfig): void {
  const app = join(root.dir, config.workingDir)
  const present = [
    'builders/dist/main.js',
    'node_modules/@spinframework/build-tools/dist/index.js',
    'node_modules/esbuild',
    'node_modules/@spinframework/wasi-http-proxy',
    'node_modules/@bytecodealliance/preview2-shim',
  ]
  const missing = present.filter((path) => !existsSync(join(app, path)))
  suite.check(
    missing.length === 0,
    `builder-js: holds the builder and its toolchain (${present.length} paths)`,
    missing,
  )
  const foreign = FOREIGN.filter((name) => existsSync(join(app, 'node_modules', name)))
  suite.check(
    foreign.length === 0,
    "builder-js: none of the relay's, the control plane's or the dev tools' packages",
    foreign,
  )
  const others = ['relay', 'control', 'dist', 'spin/templates'].filter((path) => existsSync(join(app, path)))
  suite.check(others.length === 0, "builder-js: no other program's code", others)
}

/** The biggest entries of `dir`, so the report says where an image's size goes. */
export async function largest(suite: Pick<Suite, 'log'>, dir: string, what: string, count = 8): Promise<void> {
  const output = await run(
    'sh',
    ['-c', 'du -sk -- * .[!.]* @*/* 2>/dev/null | sort -rn | head -n "$1"', 'sh', String(count)],
    { cwd: dir },
  )
  const entries = output
    .trim()
    .split('\n')
    .map((line) => line.split('\t'))
    .map(([kib, name]) => `${name} ${(Number(kib) / 1024).toFixed(1)} MiB`)
  const total = (await run('du', ['-sk', dir])).split('\t')[0]
  suite.log(`${what}: ${(Number(total) / 1024).toFixed(0)} MiB; largest: ${entries.join(', ')}`)
}

export type Registry = { host: string; url: string }

export async function startRegistry(suite: Suite, undo: UndoStack): Promise<Registry> {
  const dir = mkdtempSync(join(suite.workDir, 'registry-'))
  undo.push(`rm ${dir}`, () => removeDir(dir))
  const port = await suite.freePort()
  writeFileSync(
    join(dir, 'config.yml'),
    [
      'version: 0.1',
      'log:',
      '  level: warn',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'data')}`,
      'http:',
      `  addr: 127.0.0.1:${port}`,
      '',
    ].join('\n'),
  )
  const child = spawn(REGISTRY_BINARY, ['serve', join(dir, 'config.yml')], { stdio: ['ignore', 'ignore', 'pipe'] })
  let output = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    output = (output + chunk).slice(-4_000)
  })
  undo.push(`kill ${REGISTRY_BINARY}`, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  const url = `http://127.0.0.1:${port}`
  await suite.withTimeout(
    (async () => {
      for (;;) {
        if (child.exitCode !== null)
          throw new Error(`${REGISTRY_BINARY} exited (scripts/install-test-tools.sh installs it): ${output}`)
        try {
          await (await fetch(`${url}/v2/`)).body?.cancel()
          return
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      }
    })(),
    15_000,
    'docker-registry to answer',
  )
  return { host: `127.0.0.1:${port}`, url }
}

type BuildRun = { code: number | null; termination: string; stdout: string; stderr: string; ms: number }

/** Which builder image runs (its language), how long one build in it may take, and settings beyond the contract's. */
type BuildOptions = { language: Language; timeoutMs: number; env?: Record<string, string> }

const JS_BUILD: BuildOptions = { language: 'js', timeoutMs: BUILD_TIMEOUT_MS }

/** The image's entrypoint on `files` as the function's source, the way a build Job runs it. */
export async function runBuild(
  suite: Suite,
  root: ImageRoot,
  config: ImageConfig,
  owner: { uid: number; gid: number },
  imageRef: string,
  files: Record<string, string>,
  undo: UndoStack,
  options: BuildOptions = JS_BUILD,
): Promise<BuildRun> {
  // The writable scratch space a build needs (a Job's container layer, or an emptyDir on /tmp).
  const hostDir = mkdtempSync(join(suite.workDir, `build-${options.language}-`))
  undo.push(`rm ${hostDir}`, () => removeDir(hostDir))
  mkdirSync(join(hostDir, 'tmp'))
  chownSync(hostDir, owner.uid, owner.gid)
  chownSync(join(hostDir, 'tmp'), owner.uid, owner.gid)
  const sources: Record<string, string> = {
    'spin.toml': spinManifest({ name: 'smoke', language: options.language }, [
      { name: FUNCTION, route: `/${FUNCTION}/...` },
    ]),
  }
  for (const [path, content] of Object.entries(files)) sources[`functions/${FUNCTION}/${path}`] = content
  writeFileSync(join(hostDir, 'source.tar.gz'), await packArchive(sources, new Date(0)))
  const inside = bindInto(root, hostDir, `/tmp/build-${options.language}-${Date.now()}`, undo).slice(root.dir.length)
  const env = imageEnv(config, {
    SOURCE_ARCHIVE: `${inside}/source.tar.gz`,
    IMAGE_REF: imageRef,
    APPLICATION: 'smoke',
    LANGUAGE: options.language,
    BUILD_ID: 'b1',
    TERMINATION_LOG: `${inside}/termination-log`,
    TMPDIR: `${inside}/tmp`,
    ...options.env,
  })
  const started = Date.now()
  const build = startInRoot(root, config, owner, [...config.entrypoint, ...config.cmd], env, undo)
  const exit = await suite.withTimeout(build.exited, options.timeoutMs, `the ${options.language} builder image's build`)
  const terminationFile = join(hostDir, 'termination-log')
  const termination = existsSync(terminationFile) ? readFileSync(terminationFile, 'utf8') : ''
  return { code: exit.code, termination, stdout: build.stdout(), stderr: build.stderr(), ms: Date.now() - started }
}

async function buildTemplate(
  suite: Suite,
  root: ImageRoot,
  config: ImageConfig,
  owner: { uid: number; gid: number },
  registry: Registry,
  undo: UndoStack,
): Promise<void> {
  const { check } = suite
  const build = await runBuild(
    suite,
    root,
    config,
    owner,
    `${registry.host}/apps/smoke:b1`,
    templateFiles('js', FUNCTION),
    undo,
  )
  writeFileSync(join(suite.cacheDir, 'logs', 'builder-js-run.log'), build.stdout + build.stderr)
  suite.log(`builder-js: template build and push in the image root: ${(build.ms / 1000).toFixed(1)} s`)
  const pinned = new RegExp(`^${registry.host.replace(/\./g, '\\.')}/apps/smoke@sha256:[a-f0-9]{64}$`)
  if (
    !check(
      build.code === 0 && pinned.test(build.termination),
      'builder-js: the template builds and pushes; exit 0, the digest-pinned reference in the termination log',
      { code: build.code, termination: build.termination, log: (build.stdout + build.stderr).slice(-1_500) },
    )
  )
    return
  check(
    build.stdout.trim().split('\n').pop() === build.termination,
    'builder-js: the reference is also the last line of stdout',
    build.stdout.slice(-300),
  )

  const ref = parseRef(build.termination)
  const digest = build.termination.slice(build.termination.indexOf('@') + 1)
  const store = await openStore(ref, { dockerConfigDir: null })
  let pulled: Awaited<ReturnType<typeof pullSpinApp>>
  try {
    pulled = await pullSpinApp(store, digest)
  } catch (error) {
    check(false, `builder-js: the pushed artifact passes the shim's checks: ${(error as Error).message}`)
    return
  }
  check(
    pulled.digest === digest,
    "builder-js: the pushed artifact passes the shim's checks (OCI manifest, config label, locked app, wasm layers)",
  )
  check(
    JSON.stringify(pulled.manifest.layers.map((layer) => layer.mediaType)) ===
      JSON.stringify([WASM_LAYER_MEDIA_TYPE, LOCKED_APP_MEDIA_TYPE]),
    'builder-js: one wasm layer and the locked app layer',
    pulled.manifest.layers,
  )
  check(
    JSON.stringify(pulled.lockedApp.triggers) ===
      JSON.stringify([
        {
          id: `${FUNCTION}-http-trigger`,
          trigger_type: 'http',
          trigger_config: { component: FUNCTION, route: `/${FUNCTION}/...` },
        },
      ]),
    'builder-js: the locked app routes /smoke/... to the component',
    pulled.lockedApp.triggers,
  )
  const wasm = pulled.wasm.get(pulled.manifest.layers[0]!.digest)
  // A component, not a core module: `\0asm`, then version 0x0d and layer 1.
  const component = wasm !== undefined && wasm.subarray(0, 8).equals(Buffer.from([0, 0x61, 0x73, 0x6d, 0x0d, 0, 1, 0]))
  check(
    component && wasm.length > 1_000_000,
    `builder-js: the wasm layer is a WebAssembly component (${((wasm?.length ?? 0) / 1024 / 1024).toFixed(1)} MiB)`,
    wasm?.subarray(0, 8),
  )
  if (wasm !== undefined) await serveWithWorker(suite, 'builder-js', pulled.lockedApp, wasm, undo)
}

/**
 * The wasmtime worker on this machine (.cache/worker/target/release/worker, as the local runtime
 * runs it) serves what an image pushed: the build answers GET /smoke/deeper as the template says.
 */
export async function serveWithWorker(
  suite: Suite,
  name: string,
  lockedApp: LockedApp,
  wasm: Buffer,
  undo: UndoStack,
): Promise<void> {
  const { check } = suite
  const worker = join(suite.repo, '.cache', 'worker', 'target', 'release', 'worker')
  if (!check(existsSync(worker), `${name}: the worker binary is there to serve it (scripts/test-worker.sh)`, worker))
    return
  const dir = mkdtempSync(join(suite.workDir, 'worker-'))
  undo.push(`rm ${dir}`, () => removeDir(dir))
  writeFileSync(join(dir, 'smoke.wasm'), wasm)
  const child = spawn(worker, ['--cache-dir', join(dir, 'cache')], { stdio: ['pipe', 'pipe', 'ignore'] })
  undo.push('kill the worker', () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  const reply = new Promise<{ ok: boolean; url?: string; error?: string }>((resolve) =>
    createInterface({ input: child.stdout }).once('line', (line) => resolve(JSON.parse(line) as { ok: boolean })),
  )
  child.stdin.write(
    `${JSON.stringify({ id: 1, op: 'load', app: 'smoke', lock: lockedApp, components: { [FUNCTION]: join(dir, 'smoke.wasm') } })}\n`,
  )
  try {
    const loaded = await suite.withTimeout(reply, 120_000, `the worker to load the ${name} build`)
    if (!check(loaded.ok && loaded.url !== undefined, `${name}: the worker loads it`, loaded)) return
    const response = await fetch(`${loaded.url!}/${FUNCTION}/deeper`, { signal: AbortSignal.timeout(30_000) })
    const body = await response.text()
    check(
      response.status === 200 && body === `hello from ${FUNCTION}\n`,
      `${name}: the pushed build answers through the worker: 200 "hello from smoke"`,
      { status: response.status, body },
    )
  } catch (error) {
    check(false, `${name}: the pushed build answers through the worker: ${(error as Error).message}`)
  } finally {
    child.stdin.end()
  }
}

async function buildSyntaxError(
  suite: Suite,
  root: ImageRoot,
  config: ImageConfig,
  owner: { uid: number; gid: number },
  registry: Registry,
  undo: UndoStack,
): Promise<void> {
  const files = templateFiles('js', FUNCTION)
  files['src/index.js'] = "addEventListener('fetch', (event) => {\n  event.respondWith(new Response('x')\n})\n"
  const build = await runBuild(suite, root, config, owner, `${registry.host}/apps/smoke:b2`, files, undo)
  suite.check(
    build.code === 1 && /^function smoke: functions\/smoke\/src\/index\.js:3:1: error: /.test(build.termination),
    'builder-js: a syntax error fails with exit 1 and file:line:column in the termination log',
    { code: build.code, termination: build.termination },
  )
}
