// The go builder image in `npm run test:images`: built from builders/Dockerfile.go (Go from the
// Go module proxy on the stand-in base), then its entrypoint run in its read-only root as its
// USER, as a build Job runs it: the template's archive in, a registry on loopback out. The
// pushed artifact is pulled back with the shim's checks, must name the WAGI executor, and is
// served by the wasmtime worker (.cache/worker/target/release/worker, scripts/test-worker.sh),
// since the Node host runs components only. A compile error must fail with its file and line.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pullSpinApp } from '../common/src/spin/artifact.js'
import { parseRef } from '../common/src/spin/ref.js'
import { openStore } from '../common/src/spin/store.js'
import { templateFiles } from '../builders/src/templates.js'
import { removeDir } from './image-host.js'
import type { UndoStack } from './image-host.js'
import { runBuild, startRegistry } from './image-builder.js'
import type { BuildOptions, Registry, Suite } from './image-builder.js'
import { inspectImage, mountImageRoot, numericUser } from './image-root.js'

const TAG = 'localhost/session-relay/builder-go:test'
const FUNCTION = 'smoke'
// Go's standard library for wasip1 compiles in the first build: longer than a js build.
const GO_BUILD: BuildOptions = { language: 'go', timeoutMs: 10 * 60_000 }

export async function testGoBuilderImage (suite: Suite, parentUndo: UndoStack): Promise<void> {
  const { check, podman } = suite
  await suite.timed('build builder-go', () => podman([
    'build', '--isolation=chroot', '--format=docker', '--pull=never',
    '--build-arg', `BASE_IMAGE=${suite.baseImage}`, '-f', 'builders/Dockerfile.go', '-t', TAG, '.',
  ], { cwd: suite.repo, logFile: join(suite.cacheDir, 'logs', 'build-builder-go.log') }))
  check(true, 'builder-go: podman build --isolation=chroot -f builders/Dockerfile.go')
  const config = await inspectImage(podman, TAG)
  suite.log(`builder-go: ${(config.size / 1024 / 1024).toFixed(0)} MiB, USER ${config.user}`)
  const owner = numericUser(config.user)
  if (!check(owner !== null && owner.uid !== 0, 'builder-go: USER is a numeric non-root uid:gid', config.user)) return
  const undo = parentUndo.nested('builder-go: mounts and processes')
  try {
    const root = await mountImageRoot(podman, TAG, config, owner!, suite.workDir, undo)
    const registry = await startRegistry(suite, undo)
    const ok = await runBuild(suite, root, config, owner!, `${registry.host}/apps/smoke:b1`, templateFiles('go', FUNCTION), undo, GO_BUILD)
    const okLog = ok.stdout + ok.stderr
    writeFileSync(join(suite.cacheDir, 'logs', 'builder-go-run.log'), okLog)
    suite.log(`builder-go: template build and push in the image root: ${(ok.ms / 1000).toFixed(1)} s`)
    if (check(ok.code === 0 && ok.termination.startsWith(`${registry.host}/apps/smoke@sha256:`), 'builder-go: the template builds and pushes; exit 0, the pinned reference', { code: ok.code, log: okLog.slice(-1_500) })) {
      await checkAndServe(suite, registry, ok.termination, undo)
    }
    const files = templateFiles('go', FUNCTION)
    files['main.go'] = (files['main.go'] as string).replace(`fmt.Fprintln(w, "hello from ${FUNCTION}")`, 'fmt.Fprintln(w, undefinedName)')
    const bad = await runBuild(suite, root, config, owner!, `${registry.host}/apps/smoke:b2`, files, undo, GO_BUILD)
    check(bad.code === 1 && bad.termination === `function ${FUNCTION}: functions/${FUNCTION}/main.go:18:18: undefined: undefinedName`,
      'builder-go: a compile error fails with exit 1 and file:line:column in the termination log', { code: bad.code, termination: bad.termination })
  } finally {
    const failures = undo.unwind()
    check(failures.length === 0, 'builder-go: every mount and process undone', failures)
  }
}

async function checkAndServe (suite: Suite, registry: Registry, reference: string, undo: UndoStack): Promise<void> {
  const { check } = suite
  const digest = reference.slice(reference.indexOf('@') + 1)
  const pulled = await pullSpinApp(await openStore(parseRef(reference), { dockerConfigDir: null }), digest)
  check(JSON.stringify(pulled.lockedApp.triggers[0]?.trigger_config) === JSON.stringify({ component: FUNCTION, route: `/${FUNCTION}/...`, executor: { type: 'wagi' } }),
    'builder-go: the pushed artifact passes the shim\'s checks and names the WAGI executor', pulled.lockedApp.triggers)
  const wasm = pulled.wasm.get(pulled.manifest.layers[0]!.digest)
  check(wasm !== undefined && wasm.subarray(0, 8).equals(Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0])), `builder-go: the wasm layer is a wasip1 module (${((wasm?.length ?? 0) / 1024 / 1024).toFixed(1)} MiB)`)
  const worker = join(suite.repo, '.cache', 'worker', 'target', 'release', 'worker')
  if (!check(existsSync(worker), 'builder-go: the worker binary is there to serve it (scripts/test-worker.sh)', worker) || wasm === undefined) return
  const dir = mkdtempSync(join(suite.workDir, 'worker-'))
  undo.push(`rm ${dir}`, () => removeDir(dir))
  writeFileSync(join(dir, 'smoke.wasm'), wasm)
  const child = spawn(worker, ['--cache-dir', join(dir, 'cache')], { stdio: ['pipe', 'pipe', 'ignore'] })
  undo.push('kill the worker', () => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const reply = new Promise<{ ok: boolean; url?: string; error?: string }>((resolve) => createInterface({ input: child.stdout }).once('line', (line) => resolve(JSON.parse(line) as { ok: boolean })))
  child.stdin.write(`${JSON.stringify({ id: 1, op: 'load', app: 'smoke', lock: pulled.lockedApp, components: { [FUNCTION]: join(dir, 'smoke.wasm') } })}\n`)
  const loaded = await suite.withTimeout(reply, 120_000, 'the worker to load the go module')
  if (!check(loaded.ok && loaded.url !== undefined, 'builder-go: the worker loads it', loaded)) return
  const response = await fetch(`${loaded.url!}/${FUNCTION}/deeper`, { signal: AbortSignal.timeout(30_000) })
  const body = await response.text()
  check(response.status === 200 && body === `hello from ${FUNCTION}\n`, 'builder-go: the pushed module answers through the worker: 200 "hello from smoke"', { status: response.status, body })
  child.stdin.end()
}
