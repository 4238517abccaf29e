// What the worker bench drives: the worker binary over its stdin/stdout protocol
// (worker/README.md), and js template components built the way the js builder builds them.
import { spawn, spawnSync } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { lockedAppOf } from '@session-relay/builders/locked-app'
import { FUNCTION_VARIABLES_FILE, parseFunctionVariables } from '@session-relay/spin/function-variables'
import { scriptPath } from './servers.js'

/** The repository's root, from dist/bench/ where this runs compiled. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const TARGET_DIR = join(ROOT, '.cache/worker/target')
export const DEFAULT_WORKER = join(TARGET_DIR, 'release/worker')
/**
 * Built templates and the worker's compiled components: kept across runs, never committed.
 * BENCH_WORKER_CACHE moves it, and BENCH_WORKER_TEMPLATE builds another js template (a
 * directory laid out as spin/templates/js), so an A/B against an older template keeps its own.
 * Components are built with the worker's preinit, as the local builder builds them
 * (js-template-build.ts); BENCH_WORKER_PREINIT=false builds a cache's with componentize-js's wizer.
 */
export const CACHE = process.env.BENCH_WORKER_CACHE ?? join(ROOT, '.cache/bench-worker')
const TEMPLATE = process.env.BENCH_WORKER_TEMPLATE ?? join(ROOT, 'spin/templates/js')

/** Builds the worker in release mode (a no-op when it is up to date; 10-15 min the first time). */
export function buildWorker(): void {
  // The patched crates worker/Cargo.toml names (a no-op once made).
  const crates = spawnSync('bash', [join(ROOT, 'scripts/worker-crates.sh')], { stdio: ['ignore', 'ignore', 'inherit'] })
  if (crates.status !== 0) throw new Error('scripts/worker-crates.sh failed')
  const built = spawnSync('cargo', ['build', '--release', '--locked'], {
    cwd: join(ROOT, 'worker'),
    env: { ...process.env, CARGO_TARGET_DIR: TARGET_DIR },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  if (built.status !== 0) throw new Error('cargo build --release of worker/ failed (is Rust 1.95 installed?)')
}

/**
 * The js template (spin/templates/js) as a function named `name`, built once into the
 * cache: a distinct name is a distinct build, so ten names are ten applications that share
 * no compiled code. Rebuilt when the template's source or the builder's bundle step is newer
 * than the component.
 */
export function templateComponent(name: string): string {
  const template = TEMPLATE
  const dir = join(CACHE, 'templates', name)
  const wasm = join(dir, 'component.wasm')
  const source = join(template, 'src/index.js')
  const bundler = join(ROOT, 'builders/dist/js-bundle.js')
  const newest = Math.max(statSync(source).mtimeMs, statSync(bundler).mtimeMs)
  if (existsSync(wasm) && statSync(wasm).mtimeMs > newest) return wasm
  mkdirSync(dir, { recursive: true })
  cpSync(template, dir, { recursive: true })
  for (const file of ['src/index.js', 'package.json']) {
    writeFileSync(join(dir, file), readFileSync(join(dir, file), 'utf8').replaceAll('{{function}}', name))
  }
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  const built = spawnSync(process.execPath, [scriptPath('./js-template-build.js')], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  if (built.status !== 0) throw new Error(`building the js template as ${name} failed`)
  return wasm
}

/**
 * The template's answer without its variable read and log line: the same build (esbuild, j2w)
 * and an async fetch handler answering a short text, but no `witDependencies` (so no variables
 * import) and no console.log. The template's CPU per request is measured against it (issue 43).
 */
const PLAIN_HANDLER = `addEventListener('fetch', (event) => {
  event.respondWith(handle(event.request))
})

async function handle (request) {
  const path = new URL(request.url).pathname
  return new Response('hello from plain\\n', {
    status: 200,
    headers: { 'content-type': 'text/plain', 'x-request-path': path },
  })
}
`

/** The plain handler (above), built once into the cache as the template is. */
export function plainComponent(): string {
  const dir = join(CACHE, 'plain')
  const wasm = join(dir, 'component.wasm')
  if (existsSync(wasm) && readFileSync(join(dir, 'src/index.js'), 'utf8') === PLAIN_HANDLER) return wasm
  mkdirSync(join(dir, 'src'), { recursive: true })
  const pkg = JSON.parse(readFileSync(join(TEMPLATE, 'package.json'), 'utf8')) as Record<string, unknown>
  delete pkg.config
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...pkg, name: 'plain' }, null, 2))
  writeFileSync(join(dir, 'src/index.js'), PLAIN_HANDLER)
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  const built = spawnSync(process.execPath, [scriptPath('./js-template-build.js')], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  if (built.status !== 0) throw new Error('building the plain handler failed')
  return wasm
}

type Reply = { ok: boolean; error?: string; url?: string; [key: string]: unknown }

export type WorkerProcess = {
  pid: number
  child: ChildProcess
  send: (command: Record<string, unknown>) => Promise<Reply>
  /** Loads `wasm` as application `app` with one component on `/...`; its URL. */
  load: (app: string, wasm: string) => Promise<string>
  stop: () => Promise<void>
}

// The lock the builder pushes for the component on `/...`, with the variables its function
// declares in the variables.toml beside its wasm (the template's `greeting`).
function lockFor(component: string, wasm: string): unknown {
  const file = join(dirname(wasm), FUNCTION_VARIABLES_FILE)
  const declared = existsSync(file) ? parseFunctionVariables(readFileSync(file, 'utf8')) : {}
  const manifest = {
    name: 'bench',
    version: '0.1.0',
    triggers: [{ route: '/...', component }],
    components: [{ id: component, source: 'component.wasm', allowedOutboundHosts: [], workdir: '.' }],
  }
  return lockedAppOf(manifest, new Map([[component, declared]]))
}

/** Starts the worker; its log (one line per request of the template's console.log) is dropped. */
export function startWorker(binary: string, cacheDir: string, flags: string[] = []): WorkerProcess {
  const child = spawn(binary, ['--cache-dir', cacheDir, ...flags], { stdio: ['pipe', 'pipe', 'ignore'] })
  const waiting = new Map<number, (reply: Reply) => void>()
  createInterface({ input: child.stdout }).on('line', (line) => {
    const reply = JSON.parse(line) as Reply & { id: number }
    waiting.get(reply.id)?.(reply)
    waiting.delete(reply.id)
  })
  let nextId = 1
  const send = (command: Record<string, unknown>): Promise<Reply> =>
    new Promise((resolve) => {
      const id = nextId++
      waiting.set(id, resolve)
      child.stdin.write(JSON.stringify({ ...command, id }) + '\n')
    })
  const load = async (app: string, wasm: string): Promise<string> => {
    const reply = await send({ op: 'load', app, lock: lockFor('hello', wasm), components: { hello: wasm } })
    if (!reply.ok || reply.url === undefined) throw new Error(`load ${app}: ${reply.error}`)
    return reply.url
  }
  const stop = (): Promise<void> =>
    new Promise((resolve) => {
      if (child.exitCode !== null) return resolve()
      child.once('exit', () => resolve())
      // stdin closed: the worker exits 0 (worker/README.md).
      child.stdin.end()
    })
  return { pid: child.pid as number, child, send, load, stop }
}

/** One GET of `url`, read to the end; throws unless it answered 200. */
export async function answer(url: string): Promise<void> {
  const response = await fetch(url)
  await response.text()
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`)
}

export type Memory = { rssMb: number; anonMb: number; fileMb: number; shmemMb: number }

/**
 * A process's resident memory: anonymous (what it costs), file pages (mapped code, shared with
 * the page cache) and shared memory (memfd: wasmtime's memory images when it cannot map them from the compiled file).
 */
export function memoryOf(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? NaN)
  return {
    rssMb: kb('VmRSS') / 1024,
    anonMb: kb('RssAnon') / 1024,
    fileMb: kb('RssFile') / 1024,
    shmemMb: kb('RssShmem') / 1024,
  }
}
