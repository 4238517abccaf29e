// The js builder image in `npm run test:images`: built from builders/Dockerfile.js, then its
// entrypoint run in its read-only root as its USER, as a build Job runs it: the template's
// source archive in, a real registry on loopback (Debian's docker-registry) out. What it
// pushed is pulled back and checked as containerd-shim-spin would (spin/src), then
// served by the wasmtime worker on this machine, so the component the image made really answers.
// A source with a syntax error must fail there with exit 1 and the line in the termination log.
// The go and rust images are built and run by image-builder-compiled.ts; what both run (a
// build in an image's root, the registry, the worker) is image-build-run.ts.
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pullSpinApp } from '@session-relay/spin/artifact'
import { LOCKED_APP_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE } from '@session-relay/spin/format'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import { templateFiles } from '@session-relay/spin/templates'
import { FUNCTION, largest, runBuild, serveWithWorker, startRegistry } from './image-build-run.js'
import type { BuildOptions, Registry, Suite } from './image-build-run.js'
import type { UndoStack } from './image-host.js'
import { inspectImage, mountImageRoot, numericUser } from './image-root.js'
import type { ImageConfig, ImageRoot } from './image-root.js'

const TAG = 'localhost/session-relay/builder-js:test'
// A j2w build takes 6-25 s on a quiet machine; CI's is shared.
const BUILD_TIMEOUT_MS = 5 * 60_000
const JS_BUILD: BuildOptions = { language: 'js', timeoutMs: BUILD_TIMEOUT_MS }
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
    JS_BUILD,
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
  const build = await runBuild(suite, root, config, owner, `${registry.host}/apps/smoke:b2`, files, undo, JS_BUILD)
  suite.check(
    build.code === 1 && /^function smoke: functions\/smoke\/src\/index\.js:3:1: error: /.test(build.termination),
    'builder-js: a syntax error fails with exit 1 and file:line:column in the termination log',
    { code: build.code, termination: build.termination },
  )
}
