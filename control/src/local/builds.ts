// Builds on this machine: the builder program (the one the builder images run) as a child
// process per build, with the environment a build Job gives it, at most `concurrency` at once
// and the rest queued: in order within a tenant, round-robin across tenants, so one tenant's
// many builds do not make another's first one wait behind them all. A build moves pending → running → succeeded | failed once
// (store/builds.ts refuses anything else); its log is kept while it runs, followable, and its
// last MiB saved with the outcome; the termination-log file becomes imageRef or error.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import type { ChildProcess } from 'node:child_process'
import { formatDuration } from '@session-relay/common/config/duration'
import type { Logger } from '../logger.js'
import { failed, MAX_STORED_LOG_BYTES, succeeded } from '../runtime/build-outcome.js'
import type { BuildApplication, FinishBuild } from '../runtime/runtime.js'
import type { BuildOutcome } from '../store/builds.js'
import { markRunning, unfinishedBuilds } from '../store/builds.js'
import type { Database } from '../store/db.js'
import { childEnv, startNode, stopChild } from './children.js'
import type { LogBuffer } from './log-buffer.js'
import { createLogBuffer } from './log-buffer.js'
import type { BuildTrace } from '../tracing/build-trace.js'
import { startBuildTrace } from '../tracing/build-trace.js'

// What a failed builder that wrote no reason leaves as its error: its last words, as
// Kubernetes' FallbackToLogsOnError takes them.
const FALLBACK_LINES = 80
const FALLBACK_BYTES = 2048

export type LocalBuildsDeps = {
  db: Database
  logger: Logger
  /** Scratch space of running builds: {dir}/{build id}/. */
  dir: string
  /**
   * Each application's dependency cache, kept between its builds (go modules, cargo registry
   * and target): {cacheDir}/{clusterName}/, one per application so no tenant reads another's.
   */
  cacheDir: string
  /** The builder's main.js (resolved per build, so a missing program is reported then). */
  builder: () => string
  concurrency: number
  timeoutMs: number
  /** Extra environment of every builder (DOCKER_CONFIG when there is one). */
  env: Record<string, string>
  /** Told how each build ended (it records, deploys and counts). */
  finish: FinishBuild
  /**
   * The builder's environment for the language, its toolchain prepared first when missing
   * (toolchains.ts), progress written to the build's log. None when absent.
   */
  prepare?: (language: BuildApplication['language'], write: (text: string) => void) => Promise<Record<string, string>>
}

export type LocalBuilds = {
  /** Queue the build (its row exists, pending); it starts when a slot is free. */
  start(app: BuildApplication, buildId: string, imageRef: string, archive: Buffer): void
  /** The log of a build this process runs or queues; null when it has none (finished, or unknown). */
  log(buildId: string, options: { follow: boolean }): Readable | null
  /** Fail the builds a previous process left unfinished: nothing runs them any more. */
  recover(): Promise<void>
  close(): Promise<void>
}

type Queued = { app: BuildApplication; buildId: string; imageRef: string; workDir: string; log: LogBuffer }

export function createLocalBuilds(deps: LocalBuildsDeps): LocalBuilds {
  const { logger } = deps
  // Each queued or running build's span (tracing/build-trace.ts), ended as the build is.
  const traces = new Map<string, BuildTrace>()
  const endTrace = (buildId: string, status: 'succeeded' | 'failed'): void => {
    traces.get(buildId)?.finished(status)
    traces.delete(buildId)
  }
  const finish: FinishBuild = async (buildId, outcome) => {
    endTrace(buildId, outcome.status)
    await deps.finish(buildId, outcome)
  }
  const queue: Queued[] = []
  const logs = new Map<string, LogBuffer>()
  const running = new Map<string, ChildProcess>()
  const finishing = new Set<Promise<void>>()
  let closing = false
  // When each tenant last had a build started (a counter, not a clock); forgotten once it has
  // none queued or running, so the map holds only the tenants that are using the machine.
  const lastTurn = new Map<string, number>()
  const started = new Map<string, string>() // build id -> tenant, from its start to its end
  let turns = 0

  /** The oldest queued build of the tenant whose last start is longest ago (never first). */
  const takeNext = (): Queued => {
    let chosen = 0
    for (let index = 1; index < queue.length; index++) {
      const turn = lastTurn.get((queue[index] as Queued).app.tenant) ?? -1
      if (turn < (lastTurn.get((queue[chosen] as Queued).app.tenant) ?? -1)) chosen = index
    }
    const [next] = queue.splice(chosen, 1) as [Queued]
    lastTurn.set(next.app.tenant, turns++)
    started.set(next.buildId, next.app.tenant)
    return next
  }

  const forgetIdle = (): void => {
    const busy = new Set([...queue.map((job) => job.app.tenant), ...started.values()])
    for (const tenant of lastTurn.keys()) if (!busy.has(tenant)) lastTurn.delete(tenant)
  }

  const pump = (): void => {
    // Counted from the start, not from when the process runs: run() awaits before it spawns.
    while (!closing && started.size < deps.concurrency && queue.length > 0) {
      const next = takeNext()
      const done = run(next)
        .catch((error: unknown) => {
          logger.error({ buildId: next.buildId, err: error }, 'local build failed to run')
        })
        .finally(() => {
          finishing.delete(done)
          started.delete(next.buildId)
          forgetIdle()
          pump()
        })
      finishing.add(done)
    }
  }

  async function run(job: Queued): Promise<void> {
    const { buildId, app, workDir, log } = job
    traces.get(buildId)?.running()
    if (!(await markRunning(deps.db, buildId))) {
      // Gone (its application was deleted) or already ended.
      endTrace(buildId, 'failed')
      logs.delete(buildId)
      rmSync(workDir, { recursive: true, force: true })
      return
    }
    let main: string
    try {
      main = deps.builder()
    } catch (error) {
      rmSync(workDir, { recursive: true, force: true })
      await finish(buildId, { status: 'failed', error: (error as Error).message, log: null })
      logs.delete(buildId)
      return
    }
    let toolchain: Record<string, string> = {}
    const dependencyCache = join(deps.cacheDir, app.clusterName)
    try {
      // Before the builder and its deadline: the first build on a machine may wait minutes here.
      toolchain = (await deps.prepare?.(app.language, (text) => log.write(Buffer.from(text)))) ?? {}
      // A preparation that ended because the control plane is stopping starts no builder.
      if (closing) throw new Error('closing')
    } catch (error) {
      rmSync(workDir, { recursive: true, force: true })
      const reason = closing
        ? 'the control plane stopped while the build was preparing its toolchain; start it again'
        : (error as Error).message
      await finish(buildId, { status: 'failed', error: reason, log: log.text() })
      log.end()
      logs.delete(buildId)
      return
    }
    const terminationLog = join(workDir, 'termination-log')
    mkdirSync(dependencyCache, { recursive: true, mode: 0o700 })
    const child = startNode(main, [], {
      cwd: workDir,
      env: childEnv({
        ...deps.env,
        ...toolchain,
        SOURCE_ARCHIVE: join(workDir, 'source.tar.gz'),
        IMAGE_REF: job.imageRef,
        APPLICATION: app.name,
        LANGUAGE: app.language,
        BUILD_ID: buildId,
        TERMINATION_LOG: terminationLog,
        DEPENDENCY_CACHE: dependencyCache,
      }),
    })
    running.set(buildId, child)
    logger.info({ buildId, appId: app.id, pid: child.pid }, 'build running')
    const trace = traces.get(buildId)
    child.stdout?.on('data', (chunk: Buffer) => {
      log.write(chunk)
      trace?.output(chunk)
    })
    child.stderr?.on('data', (chunk: Buffer) => log.write(chunk))
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      void stopChild(child, 0)
    }, deps.timeoutMs)
    const exit = await new Promise<{ code: number | null; spawnError?: Error }>((resolve) => {
      child.once('error', (error) => resolve({ code: null, spawnError: error }))
      child.once('close', (code) => resolve({ code }))
    })
    clearTimeout(timer)
    running.delete(buildId)
    let message = ''
    try {
      message = readFileSync(terminationLog, 'utf8').trim()
    } catch {
      // The builder wrote none.
    }
    rmSync(workDir, { recursive: true, force: true })
    const text = log.text()
    let outcome: BuildOutcome
    if (timedOut) {
      outcome = {
        status: 'failed',
        error: `DeadlineExceeded: the build ran longer than ${formatDuration(deps.timeoutMs)} (PLATFORM_BUILD_TIMEOUT)`,
        log: text,
      }
    } else if (closing) {
      outcome = {
        status: 'failed',
        error: 'the control plane stopped while the build was running; start it again',
        log: text,
      }
    } else if (exit.spawnError !== undefined) {
      outcome = { status: 'failed', error: `the builder could not start: ${exit.spawnError.message}`, log: text }
    } else if (exit.code === 0) {
      outcome = succeeded(message, job.imageRef, text)
    } else {
      outcome = failed(
        message !== '' ? message : lastWords(text) || `the builder exited with code ${String(exit.code)}`,
        text,
      )
    }
    await finish(buildId, outcome)
    // Followers' streams end only now: whoever waited for the log to end can invoke at once.
    log.end()
    logs.delete(buildId)
  }

  return {
    start(app, buildId, imageRef, archive) {
      const workDir = join(deps.dir, buildId)
      mkdirSync(workDir, { recursive: true, mode: 0o700 })
      writeFileSync(join(workDir, 'source.tar.gz'), archive, { mode: 0o600 })
      const log = createLogBuffer(MAX_STORED_LOG_BYTES)
      logs.set(buildId, log)
      traces.set(buildId, startBuildTrace(buildId, { appId: app.id, language: app.language }))
      queue.push({ app, buildId, imageRef, workDir, log })
      pump()
    },
    log(buildId, { follow }) {
      return logs.get(buildId)?.open({ follow }) ?? null
    },
    async recover() {
      for (const build of await unfinishedBuilds(deps.db)) {
        await finish(build.id, {
          status: 'failed',
          error: `the control plane restarted while this build was ${build.status}; start it again`,
          log: null,
        })
      }
      rmSync(deps.dir, { recursive: true, force: true })
    },
    async close() {
      closing = true
      for (const job of queue.splice(0)) {
        job.log.end()
        rmSync(job.workDir, { recursive: true, force: true })
        await finish(job.buildId, {
          status: 'failed',
          error: 'the control plane stopped before the build started; start it again',
          log: null,
        })
      }
      await Promise.all([...running.values()].map((child) => stopChild(child, 0)))
      await Promise.all([...finishing])
    },
  }
}

/** The end of the log as FallbackToLogsOnError keeps it: the last 80 lines, at most 2 KiB. */
function lastWords(text: string): string {
  const lines = text.trimEnd().split('\n').slice(-FALLBACK_LINES).join('\n')
  return lines.length > FALLBACK_BYTES ? lines.slice(-FALLBACK_BYTES) : lines
}
