// The worker process (worker/README.md) as the local runtime drives it: started at the first
// command, one JSON command per line on its stdin and one reply per line on its stdout, matched
// by id (a line without an id is an event), each checked against the protocol's one definition
// (protocol.ts); its log, JSON lines on stderr, handed on line by line. A worker that exits on
// its own fails the commands it had not answered and is started again after a backoff that
// doubles up to a cap (reset once it stayed up a while); whoever loaded applications into it is
// told when it is down and when it is back, to load them again. Its environment is `env` and
// nothing else: the OTEL_* variables that turn its traces on, when the control plane's are.
import type { ChildProcess } from 'node:child_process'
import { writeFileSync, rmSync } from 'node:fs'
import type { Logger } from '../../logger.js'
import { startProgram, stopChild } from '../children.js'
import { WorkerCommandError, WorkerUnreachableError } from './errors.js'
import { lines } from './lines.js'
import type { CommandOf, Op, ReplyOf, WorkerEvent } from './protocol.js'
import { checkReply, classify } from './protocol.js'

/** A worker log line: its JSON fields, `app` naming the application it concerns, if any. */
export type WorkerLogLine = { app?: unknown; msg?: unknown; level?: unknown; [field: string]: unknown }

export type WorkerDeps = {
  logger: Logger
  /** The binary; a function so a missing one is reported when it is needed. */
  program: () => string
  args: string[]
  /** Its whole environment. */
  env: Record<string, string>
  cwd: string
  /** Where the running worker's pid is kept, so a later control plane can stop an orphan. */
  pidFile: string
  restartBackoff: { initialMs: number; maxMs: number }
  onLog: (line: WorkerLogLine, raw: string) => void
  /** A line the worker wrote on its own (no `id`), as the protocol defines them. */
  onEvent: (event: WorkerEvent) => void
  /** The worker exited on its own: why, and when it comes back. */
  onDown: (problem: string) => void
  /** A worker (re)started after onDown: what it held is gone. */
  onRestart: () => void
}

export type Worker = {
  /**
   * One command's reply, checked against the protocol. Rejects with WorkerUnreachableError when
   * the worker cannot be started or ends first, WorkerCommandError (the worker's `error`) when
   * it refused the command, WorkerProtocolError when its reply is not what the protocol says.
   */
  send: <O extends Op>(command: CommandOf<O> & { op: O }) => Promise<ReplyOf<O>>
  /** Whether a worker process runs now. */
  running: () => boolean
  /** Why commands cannot reach a worker now (it exited and waits for its restart), or null. */
  problem: () => string | null
  close: () => Promise<void>
}

type Waiter = { op: Op; resolve: (reply: unknown) => void; reject: (error: Error) => void }

/** A worker up this long has recovered: its next exit starts the backoff over. */
const STABLE_MS = 10_000
const STOP_GRACE_MS = 5000

export function createWorker(deps: WorkerDeps): Worker {
  const { logger } = deps
  let child: ChildProcess | null = null
  let nextId = 1
  let pending = new Map<number, Waiter>()
  let problem: string | null = null
  let restarts = 0
  let startedAt = 0
  let restartTimer: NodeJS.Timeout | null = null
  let closing = false

  function onStdout(line: string): void {
    let parsed: unknown
    try {
      parsed = JSON.parse(line)
    } catch {
      logger.warn({ line: line.slice(0, 200) }, 'the worker wrote a line that is not JSON on stdout')
      return
    }
    let sorted
    try {
      sorted = classify(parsed)
    } catch (error) {
      logger.warn({ reason: (error as Error).message }, 'the worker wrote a line off its protocol')
      return
    }
    if (sorted.kind === 'event') {
      deps.onEvent(sorted.event)
      return
    }
    const waiter = pending.get(sorted.id)
    if (waiter === undefined) return
    pending.delete(sorted.id)
    try {
      const reply = checkReply(waiter.op, sorted.reply)
      if (reply.ok) waiter.resolve(reply)
      else waiter.reject(new WorkerCommandError(reply.error))
    } catch (error) {
      logger.error({ op: waiter.op, reason: (error as Error).message }, 'the worker answered off its protocol')
      waiter.reject(error as Error)
    }
  }

  function start(): ChildProcess {
    const program = deps.program()
    const started = startProgram(program, deps.args, { cwd: deps.cwd, env: deps.env, openStdin: true })
    child = started
    startedAt = Date.now()
    if (started.pid !== undefined) writeFileSync(deps.pidFile, `${started.pid}\n`)
    logger.info({ pid: started.pid, restarts }, 'local worker starting')
    lines(started.stdout, onStdout)
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
    send<O extends Op>(command: CommandOf<O> & { op: O }): Promise<ReplyOf<O>> {
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
        pending.set(id, { op: command.op, resolve: resolve as (reply: unknown) => void, reject })
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
