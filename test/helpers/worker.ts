// The wasmtime worker (worker/) as the local runtime drives it: a child process speaking its
// line protocol on stdin/stdout (worker/README.md). The release binary is the one
// scripts/test-worker.sh builds into .cache/worker/target (npm test runs it); a test that
// needs it and finds none fails naming that script.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import { stopAtTeardown } from './stop-child.js'

const root = fileURLToPath(new URL('../../', import.meta.url))
const WORKER = process.env.WORKER_BIN ?? join(root, '.cache/worker/target/release/worker')

type Worker = {
  /** Sends one command and waits for its reply. */
  send: (command: Record<string, unknown>) => Promise<Record<string, unknown>>
  /** Everything the worker logged on stderr so far (its guests' output among it). */
  log: () => string
}

export async function startWorker (t: Test): Promise<Worker> {
  if (!existsSync(WORKER)) throw new Error(`${WORKER} is missing: run scripts/test-worker.sh (or set WORKER_BIN)`)
  const cache = await mkdtemp(join(tmpdir(), 'worker-cache-'))
  t.teardown(() => rm(cache, { recursive: true, force: true }))
  const child = spawn(WORKER, ['--cache-dir', cache], { stdio: ['pipe', 'pipe', 'pipe'] })
  stopAtTeardown(t, child)
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const waiting = new Map<number, (reply: Record<string, unknown>) => void>()
  createInterface({ input: child.stdout }).on('line', (line) => {
    const reply = JSON.parse(line) as Record<string, unknown>
    waiting.get(reply.id as number)?.(reply)
    waiting.delete(reply.id as number)
  })
  let next = 1
  return {
    send: async (command) => await new Promise((resolve) => {
      const id = next++
      waiting.set(id, resolve)
      child.stdin.write(`${JSON.stringify({ id, ...command })}\n`)
    }),
    log: () => stderr,
  }
}
