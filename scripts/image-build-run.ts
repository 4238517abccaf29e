// What the builder images' tests share (image-builder.ts for js, image-builder-compiled.ts for
// go and rust): one build in an image's root as a build Job runs it, the registry on loopback it
// pushes to, the wasmtime worker that serves what it pushed, and where an image's size goes.
import { spawn } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { LockedApp } from '@session-relay/spin/format'
import type { Language } from '@session-relay/spin/languages'
import { spinManifest } from '@session-relay/spin/manifest'
import { packArchive } from '@session-relay/spin/source/archive'
import { removeDir, run } from './image-host.js'
import type { Podman, UndoStack } from './image-host.js'
import { bindInto, imageEnv, startInRoot } from './image-root.js'
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

/** The one function every test build has, at /smoke/... */
export const FUNCTION = 'smoke'
// The one test/helpers/registry.ts starts, by the same variable.
const REGISTRY_BINARY = process.env.DOCKER_REGISTRY_BIN ?? 'docker-registry'

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

export type BuildRun = { code: number | null; termination: string; stdout: string; stderr: string; ms: number }

/** Which builder image runs (its language), how long one build in it may take, and settings beyond the contract's. */
export type BuildOptions = { language: Language; timeoutMs: number; env?: Record<string, string> }

/** The image's entrypoint on `files` as the function's source, the way a build Job runs it. */
export async function runBuild(
  suite: Suite,
  root: ImageRoot,
  config: ImageConfig,
  owner: { uid: number; gid: number },
  imageRef: string,
  files: Record<string, string>,
  undo: UndoStack,
  options: BuildOptions,
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
