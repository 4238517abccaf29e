// The go and rust builder images in `npm run test:images`: built from builders/Dockerfile.go
// (Go from the Go module proxy) and builders/Dockerfile.rust (Debian 13's rustc, cargo, wasm32
// standard library and lld, the preview 1 adapter) on the stand-in base, then each entrypoint
// run in its read-only root as its USER, as a build Job runs it: the template's archive in, a
// registry on loopback out. The pushed artifact is pulled back with the shim's checks (go's
// names the WAGI executor, rust's is a component) and served by the wasmtime worker
// (.cache/worker/target/release/worker, scripts/test-worker.sh). A compile error must fail with
// its file and line.
import { chownSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pullSpinApp } from '@session-relay/spin/artifact'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import { templateFiles } from '@session-relay/spin/templates'
import { removeDir } from './image-host.js'
import type { UndoStack } from './image-host.js'
import { FUNCTION, largest, runBuild, serveWithWorker, startRegistry } from './image-build-run.js'
import type { Registry, Suite } from './image-build-run.js'
import { bindInto, inspectImage, mountImageRoot, numericUser } from './image-root.js'
import type { ImageRoot } from './image-root.js'

const CORE_MODULE = Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0])
const COMPONENT = Buffer.from([0, 0x61, 0x73, 0x6d, 0x0d, 0, 1, 0])
// The trust store the stand-in base lends (scripts/image-base.ts): a pod would mount its own.
const LENT_TRUST = '/usr/local/etc/host-ca-certificates.crt'

type CompiledImage = {
  language: 'go' | 'rust'
  /** What the wasm layer must be: WAGI runs core modules, Spin's default executor components. */
  wasm: { magic: Buffer; what: string }
  executor: { type: 'wagi' } | null
  /** The template with a compile error, and the termination log it must give. */
  broken: (files: Record<string, string>) => Record<string, string>
  reason: string
  /**
   * Whether the two builds share a DEPENDENCY_CACHE. A Job has none, so each build compiles
   * everything; go's first build runs exactly so. Rust's fresh cache costs the first build as
   * much as a Job's and spares the compile error's build a second compile of the SDK's crates.
   */
  sharedCache: boolean
  /** Paths in the image a build needs (the toolchain), relative to its root. */
  toolchain: string[]
}

const IMAGES: Record<'go' | 'rust', CompiledImage> = {
  go: {
    language: 'go',
    wasm: { magic: CORE_MODULE, what: 'a wasip1 module' },
    executor: { type: 'wagi' },
    broken: (files) => ({
      ...files,
      'main.go': (files['main.go'] as string).replace(
        `fmt.Fprintln(w, "hello from ${FUNCTION}")`,
        'fmt.Fprintln(w, undefinedName)',
      ),
    }),
    reason: `function ${FUNCTION}: functions/${FUNCTION}/main.go:18:18: undefined: undefinedName`,
    sharedCache: false,
    toolchain: ['usr/local/go/bin/go', 'app/builders/dist/main.js', 'app/node_modules/tar-stream'],
  },
  rust: {
    language: 'rust',
    wasm: { magic: COMPONENT, what: 'a component' },
    executor: null,
    broken: (files) => ({
      ...files,
      'src/lib.rs': (files['src/lib.rs'] as string).replace('.status(200)', '.status(undefined_name)'),
    }),
    reason: `function ${FUNCTION}: functions/${FUNCTION}/src/lib.rs:10:17: error[E0425]: cannot find value \`undefined_name\` in this scope: not found in this scope`,
    sharedCache: true,
    toolchain: [
      'usr/bin/cargo',
      'usr/bin/rustc',
      'usr/bin/wasm-ld',
      'usr/lib/rustlib/wasm32-wasip1/lib',
      'opt/adapter/wasi_snapshot_preview1.reactor.wasm',
      'app/builders/dist/main.js',
      'app/node_modules/@bytecodealliance/jco-transpile',
    ],
  },
}

// The first build compiles Go's standard library for wasip1, or the Spin SDK's crates: a Job
// has no dependency cache, so every build in a cluster pays it.
const BUILD_TIMEOUT_MS = 15 * 60_000

export async function testCompiledBuilderImage(
  language: 'go' | 'rust',
  suite: Suite,
  parentUndo: UndoStack,
): Promise<void> {
  const spec = IMAGES[language]
  const name = `builder-${language}`
  const tag = `localhost/session-relay/${name}:test`
  const { check, podman } = suite
  await suite.timed(`build ${name}`, () =>
    podman(
      [
        'build',
        '--isolation=chroot',
        '--format=docker',
        '--pull=never',
        '--build-arg',
        `BASE_IMAGE=${suite.baseImage}`,
        '-f',
        `builders/Dockerfile.${language}`,
        '-t',
        tag,
        '.',
      ],
      { cwd: suite.repo, logFile: join(suite.cacheDir, 'logs', `build-${name}.log`) },
    ),
  )
  check(true, `${name}: podman build --isolation=chroot -f builders/Dockerfile.${language}`)
  const config = await inspectImage(podman, tag)
  suite.log(`${name}: ${(config.size / 1024 / 1024).toFixed(0)} MiB, USER ${config.user}`)
  const owner = numericUser(config.user)
  if (!check(owner !== null && owner.uid !== 0, `${name}: USER is a numeric non-root uid:gid`, config.user)) return
  const undo = parentUndo.nested(`${name}: mounts and processes`)
  try {
    const root = await mountImageRoot(podman, tag, config, owner!, suite.workDir, undo)
    const missing = spec.toolchain.filter((path) => !existsSync(join(root.dir, path)))
    check(
      missing.length === 0,
      `${name}: holds the builder and its toolchain (${spec.toolchain.length} paths)`,
      missing,
    )
    await largest(suite, join(root.dir, 'usr', 'lib'), `${name}: /usr/lib`, 5)
    const registry = await startRegistry(suite, undo)
    const env = buildEnv(root, owner!, spec, suite, undo)
    const options = { language, timeoutMs: BUILD_TIMEOUT_MS, env }
    const ok = await runBuild(
      suite,
      root,
      config,
      owner!,
      `${registry.host}/apps/smoke:b1`,
      templateFiles(language, FUNCTION),
      undo,
      options,
    )
    const okLog = ok.stdout + ok.stderr
    writeFileSync(join(suite.cacheDir, 'logs', `${name}-run.log`), okLog)
    suite.log(
      `${name}: template build and push in the image root (nothing cached, as in a Job): ${(ok.ms / 1000).toFixed(1)} s`,
    )
    if (
      check(
        ok.code === 0 && ok.termination.startsWith(`${registry.host}/apps/smoke@sha256:`),
        `${name}: the template builds and pushes; exit 0, the pinned reference`,
        { code: ok.code, log: okLog.slice(-1_500) },
      )
    ) {
      await checkAndServe(suite, spec, registry, ok.termination, undo)
    }
    const bad = await runBuild(
      suite,
      root,
      config,
      owner!,
      `${registry.host}/apps/smoke:b2`,
      spec.broken(templateFiles(language, FUNCTION)),
      undo,
      options,
    )
    suite.log(
      `${name}: the compile error's build${spec.sharedCache ? ' (dependencies cached)' : ''}: ${(bad.ms / 1000).toFixed(1)} s`,
    )
    check(
      bad.code === 1 && bad.termination === spec.reason,
      `${name}: a compile error fails with exit 1 and file:line:column in the termination log`,
      { code: bad.code, termination: bad.termination, log: (bad.stdout + bad.stderr).slice(-1_500) },
    )
  } finally {
    const failures = undo.unwind()
    check(failures.length === 0, `${name}: every mount and process undone`, failures)
  }
}

// Settings beyond the Job's: the trust store the downloads need (crates.io and the Go module
// proxy may be reached through a proxy only the host trusts; a pod would be given its own) and,
// when the spec shares one, a dependency cache for both builds.
function buildEnv(
  root: ImageRoot,
  owner: { uid: number; gid: number },
  spec: CompiledImage,
  suite: Suite,
  undo: UndoStack,
): Record<string, string> {
  const env: Record<string, string> = existsSync(join(root.dir, LENT_TRUST)) ? { SSL_CERT_FILE: LENT_TRUST } : {}
  if (!spec.sharedCache) return env
  const cache = mkdtempSync(join(suite.workDir, `deps-${spec.language}-`))
  undo.push(`rm ${cache}`, () => removeDir(cache))
  chownSync(cache, owner.uid, owner.gid)
  const inside = `/tmp/deps-${spec.language}`
  bindInto(root, cache, inside, undo)
  return { ...env, DEPENDENCY_CACHE: inside }
}

async function checkAndServe(
  suite: Suite,
  spec: CompiledImage,
  registry: Registry,
  reference: string,
  undo: UndoStack,
): Promise<void> {
  const { check } = suite
  const name = `builder-${spec.language}`
  const digest = reference.slice(reference.indexOf('@') + 1)
  const pulled = await pullSpinApp(await openStore(parseRef(reference), { dockerConfigDir: null }), digest)
  const expected = {
    component: FUNCTION,
    route: `/${FUNCTION}/...`,
    ...(spec.executor === null ? {} : { executor: spec.executor }),
  }
  check(
    JSON.stringify(pulled.lockedApp.triggers[0]?.trigger_config) === JSON.stringify(expected),
    `${name}: the pushed artifact passes the shim's checks; the trigger is ${JSON.stringify(expected)}`,
    pulled.lockedApp.triggers,
  )
  const wasm = pulled.wasm.get(pulled.manifest.layers[0]!.digest)
  check(
    wasm !== undefined && wasm.subarray(0, 8).equals(spec.wasm.magic),
    `${name}: the wasm layer is ${spec.wasm.what} (${((wasm?.length ?? 0) / 1024).toFixed(0)} KiB)`,
    wasm?.subarray(0, 8),
  )
  if (wasm !== undefined) await serveWithWorker(suite, name, pulled.lockedApp, wasm, undo)
}
