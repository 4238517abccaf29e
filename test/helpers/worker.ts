// The wasmtime worker (worker/) as the local runtime drives it: a child process speaking its
// line protocol on stdin/stdout (worker/README.md). The release binary is the one
// scripts/test-worker.sh builds into .cache/worker/target (npm test runs it); a test that
// needs it and finds none fails naming that script. serveImage pulls a built artifact the way
// the local runtime does (spin/src/unpack.ts: checked as the shim checks it) and loads it.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import { unpackSpinApp } from '@session-relay/spin/unpack'
import { stopAtTeardown } from './stop-child.js'

const root = fileURLToPath(new URL('../../', import.meta.url))
const WORKER = process.env.WORKER_BIN ?? join(root, '.cache/worker/target/release/worker')
/** The js builds' pre-initializer the worker's cargo build makes beside it (builders/src/js-preinit.ts). */
export const PREINIT = join(dirname(WORKER), 'preinit')

type Worker = {
  /** Sends one command and waits for its reply. */
  send: (command: Record<string, unknown>) => Promise<Record<string, unknown>>
  /** Everything the worker logged on stderr so far (its guests' output among it). */
  log: () => string
}

/** A worker of the test's own; `cacheDir` a compiled-components directory to share (a fresh one when absent). */
export async function startWorker(t: Test, options: { cacheDir?: string; flags?: string[] } = {}): Promise<Worker> {
  if (!existsSync(WORKER)) throw new Error(`${WORKER} is missing: run scripts/test-worker.sh (or set WORKER_BIN)`)
  let cache = options.cacheDir
  if (cache === undefined) {
    const own = await mkdtemp(join(tmpdir(), 'worker-cache-'))
    t.teardown(() => rm(own, { recursive: true, force: true }))
    cache = own
  }
  const child = spawn(WORKER, ['--cache-dir', cache, ...(options.flags ?? [])], { stdio: ['pipe', 'pipe', 'pipe'] })
  stopAtTeardown(t, child)
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const waiting = new Map<number, (reply: Record<string, unknown>) => void>()
  createInterface({ input: child.stdout }).on('line', (line) => {
    const reply = JSON.parse(line) as Record<string, unknown>
    waiting.get(reply.id as number)?.(reply)
    waiting.delete(reply.id as number)
  })
  let next = 1
  return {
    send: async (command) =>
      await new Promise((resolve) => {
        const id = next++
        waiting.set(id, resolve)
        child.stdin.write(`${JSON.stringify({ id, ...command })}\n`)
      }),
    log: () => stderr,
  }
}

/** The Spin application `image` pulled (a registry with `dockerConfigDir`'s credentials, or an OCI layout) and loaded into a worker of its own. */
export async function serveImage(
  t: Test,
  image: string,
  options: { dockerConfigDir?: string } = {},
): Promise<{ url: string; digest: string; log: () => string; components: Record<string, string> }> {
  const dir = await mkdtemp(join(tmpdir(), 'worker-app-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const app = await unpackSpinApp(image, dir, { dockerConfigDir: options.dockerConfigDir ?? null })
  const worker = await startWorker(t)
  const reply = await worker.send({ op: 'load', app: 'app', lock: app.lockedApp, components: app.components })
  if (reply.ok !== true) throw new Error(`the worker refused ${image}: ${JSON.stringify(reply)}\n${worker.log()}`)
  return { url: String(reply.url), digest: app.digest, log: worker.log, components: app.components }
}
