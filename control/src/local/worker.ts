// The worker process (worker/README.md) as the local runtime drives it: started at the first
// command, one JSON command per line on its stdin and one reply per line on its stdout, matched
// by id (a line without an id is an event); its log, JSON lines on stderr, handed on line by
// line. A worker that exits on its own fails the commands it had not answered and is started
// again after a backoff that doubles up to a cap (reset once it stayed up a while); whoever
// loaded applications into it is told when it is down and when it is back, to load them again.
// It reads no environment: it gets none.
import type { ChildProcess } from 'node:child_process'
import { writeFileSync, rmSync } from 'node:fs'
import { UnavailableError } from '@session-relay/common/errors'
import type { Logger } from '../logger.js'
import { startProgram, stopChild } from './children.js'

type WorkerReply = Record<string, unknown>

/** A worker log line: its JSON fields, `app` naming the application it concerns, if any. */
export type WorkerLogLine = { app?: unknown; msg?: unknown; level?: unknown; [field: string]: unknown }

export type WorkerDeps = {
  logger: Logger
  /** The binary; a function so a missing one is reported when it is needed. */
  program: () => string
  args: string[]
  cwd: string
  /** Where the running worker's pid is kept, so a later control plane can stop an orphan. */
  pidFile: string
  restartBackoff: { initialMs: number; maxMs: number }
  onLog: (line: WorkerLogLine, raw: string) => void
  /** A line the worker wrote on its own (no `id`): `{event: "awake", app}` (worker/README.md). */
  onEvent: (event: Record<string, unknown>) => void
  /** The worker exited on its own: why, and when it comes back. */
  onDown: (problem: string) => void
  /** A worker (re)started after onDown: what it held is gone. */
  onRestart: () => void
}

export type Worker = {
  /** One command's reply; rejects when the worker cannot be started or ends first, and with the worker's `error` when `ok` is false. */
  send: (command: Record<string, unknown>) => Promise<WorkerReply>
  /** Whether a worker process runs now. */
  running: () => boolean
  /** Why commands cannot reach a worker now (it exited and waits for its restart), or null. */
  problem: () => string | null
  close: () => Promise<void>
}

/** A worker that is down, or could not be started: the spec's 503 "worker unreachable". */
class WorkerUnreachableError extends UnavailableError {}

/** A worker up this long has recovered: its next exit starts the backoff over. */
const STABLE_MS = 10_000
const STOP_GRACE_MS = 5000
const MAX_LINE_BYTES = 1024 * 1024

export function createWorker(deps: WorkerDeps): Worker {
  const { logger } = deps
  let child: ChildProcess | null = null
  let nextId = 1
  let pending = new Map<number, { resolve: (reply: WorkerReply) => void; reject: (error: Error) => void }>()
  let problem: string | null = null
  let restarts = 0
  let startedAt = 0
  let restartTimer: NodeJS.Timeout | null = null
  let closing = false

  function start(): ChildProcess {
    const program = deps.program()
    const started = startProgram(program, deps.args, { cwd: deps.cwd, env: {}, openStdin: true })
    child = started
    startedAt = Date.now()
    if (started.pid !== undefined) writeFileSync(deps.pidFile, `${started.pid}\n`)
    logger.info({ pid: started.pid, restarts }, 'local worker starting')
    lines(started.stdout, (line) => {
      let reply: WorkerReply
      try {
        reply = JSON.parse(line) as WorkerReply
      } catch {
        logger.warn({ line: line.slice(0, 200) }, 'the worker wrote a line that is not JSON on stdout')
        return
      }
      if (reply.id === undefined && typeof reply.event === 'string') {
        deps.onEvent(reply)
        return
      }
      const waiter = pending.get(reply.id as number)
      if (waiter === undefined) return
      pending.delete(reply.id as number)
      if (reply.ok === true) waiter.resolve(reply)
      else waiter.reject(new Error(String(reply.error)))
    })
    lines(started.stderr, (line) => {
      let parsed: WorkerLogLine
      try {
        parsed = JSON.parse(line) as WorkerLogLine
      } catch {
        parsed = { msg: line }
      }
      deps.onLog(parsed, line)
    })
    const ended = (why: string): void => {
      if (child !== started) return
      child = null
      rmSync(deps.pidFile, { force: true })
      const failed = pending
      pending = new Map()
      const error = new WorkerUnreachableError(`the worker ${why}`)
      for (const waiter of failed.values()) waiter.reject(error)
      if (closing) return
      if (Date.now() - startedAt >= STABLE_MS) restarts = 0
      scheduleRestart(`the worker ${why}`)
    }
    started.once('error', (error) => ended(`could not start: ${error.message}`))
    started.once('close', (code, signal) => ended(`exited (${signal ?? `code ${String(code)}`})`))
    return started
  }

  // Down: commands fail at once, saying why, until the restart.
  function scheduleRestart(why: string): void {
    const delay = Math.min(deps.restartBackoff.maxMs, deps.restartBackoff.initialMs * 2 ** restarts)
    restarts++
    problem = `${why}; restarting in ${delay} ms (restart ${restarts})`
    logger.warn({ why, delayMs: delay, restarts }, 'the local worker is down; restarting it')
    deps.onDown(problem)
    restartTimer = setTimeout(() => {
      restartTimer = null
      if (closing) return
      try {
        start()
      } catch (error) {
        // The binary went away, say: tried again later, as a crash is.
        scheduleRestart(`the worker could not start: ${(error as Error).message}`)
        return
      }
      problem = null
      deps.onRestart()
    }, delay)
  }

  return {
    send(command) {
      if (closing) return Promise.reject(new WorkerUnreachableError('the local runtime is shutting down'))
      if (child === null && restartTimer !== null)
        return Promise.reject(new WorkerUnreachableError(problem ?? 'the worker is restarting'))
      let running: ChildProcess
      try {
        running = child ?? start()
      } catch (error) {
        return Promise.reject(error instanceof Error ? error : new Error(String(error)))
      }
      const id = nextId++
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject })
        running.stdin?.write(`${JSON.stringify({ ...command, id })}\n`)
      })
    },
    running: () => child !== null,
    problem: () => problem,
    async close() {
      closing = true
      if (restartTimer !== null) clearTimeout(restartTimer)
      const running = child
      if (running === null) return
      // Its stdin closing is the worker's signal to exit; the group is killed if it does not.
      running.stdin?.end()
      await stopChild(running, STOP_GRACE_MS)
    },
  }
}

/** Calls `onLine` for each line of `stream`; a line longer than MAX_LINE_BYTES is cut there. */
function lines(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (stream === null) return
  let rest = ''
  stream.setEncoding('utf8')
  stream.on('data', (chunk: string) => {
    rest += chunk
    for (let newline = rest.indexOf('\n'); newline !== -1; newline = rest.indexOf('\n')) {
      const line = rest.slice(0, newline)
      rest = rest.slice(newline + 1)
      if (line !== '') onLine(line)
    }
    if (rest.length > MAX_LINE_BYTES) {
      onLine(rest.slice(0, MAX_LINE_BYTES))
      rest = ''
    }
  })
}
