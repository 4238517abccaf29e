// Deployments on this machine: every application loaded into the one worker process
// (worker/README.md), each on its own loopback port, as the SpinApps' pods do in a cluster. A
// deploy pulls the artifact into the worker's directory (its wasm files by digest) and loads it;
// a redeploy loads again on the same port and is atomic for callers: the previous version
// answers (invoke and its URL) until the worker has the new one ready and swaps it in place,
// requests in flight finishing on the old one (worker/README.md); delete unloads and
// prunes. The worker's log lines naming an application are that application's log. A worker
// that exits on its own is restarted after a backoff (worker.ts) and every application loaded
// again; meanwhile each deployment says why it does not answer.
// Variables reach the worker in the `load` command, from memory, never through an environment
// or a file, and the artifact is re-locked to declare exactly their names
// (spin/src/relock.ts): a new value or a new name is a reload, never a rebuild. Values are
// never logged. An application idle past the timeout is let go by the worker, which keeps its
// port and loads it again at the next request (its `awake` event says so).
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { relockReference } from '@session-relay/spin/relock'
import type { UnpackedSpinApp } from '@session-relay/spin/unpack'
import { unpackSpinApp } from '@session-relay/spin/unpack'
import type { Logger } from '../logger.js'
import type { Connections } from './connections.js'
import { createConnections } from './connections.js'
import type { LogBuffer } from './log-buffer.js'
import { createLogBuffer } from './log-buffer.js'
import { createIdleTracker } from './idle.js'
import { openPortBook } from './ports.js'
import type { WorkerLogLine } from './worker-client/process.js'
import { createWorker } from './worker-client/process.js'
import type { AppStats } from './worker-client/protocol.js'

/** A local deployment as it is now. */
export type DeploymentStatus = {
  image: string
  running: boolean
  ready: boolean
  /** Unloaded for want of requests; its URL answers still, loading it again at the first request. */
  idle: boolean
  url: string | null
  message: string
}

const MAX_APP_LOG_BYTES = 1024 * 1024

export type LocalHostsDeps = {
  logger: Logger
  /** The worker's working directory, its pid file and the pulled components (wasm/). */
  dir: string
  /** The worker binary; a function so a missing one is reported at deploy time. */
  worker: () => string
  /** Where the worker keeps compiled components by digest. */
  cacheDir: string
  /** How the artifact's store is reached (relock and pull). */
  registry?: { dockerConfigDir: string | null; insecure: boolean }
  /** The first restart's delay after the worker exits on its own, doubled per exit up to maxMs. */
  restartBackoff?: { initialMs: number; maxMs: number }
  /** Address ranges (CIDR) functions' outgoing requests may reach although internal: the worker's --allow-private-outbound. */
  allowPrivateOutbound?: string[]
  /** The worker's threads serving requests (its --threads; the worker's own default, 1, when unset). */
  threads?: number
  /** Every instance's memory together (its --memory-budget-bytes; the worker's own default, half the machine's, when unset). */
  memoryBudgetBytes?: number
  /**
   * Scale to zero: an application without a request for `timeoutMs` is unloaded (its memory
   * given back) with its port kept: the next request there, or through invoke, loads it again.
   * Checked every `sweepMs` (a quarter of the
   * timeout, at most 30 s, by default); `now` is the clock; `swept` is told the request counts
   * each sweep read (tests wait for a count rather than a time).
   */
  idle?: {
    timeoutMs: number
    sweepMs?: number
    now?: () => number
    swept?: (counts: ReadonlyMap<string, number>) => void
  }
  /** Per application, the worker's `limits` (worker/README.md); its defaults when absent. */
  limits?: {
    requestTimeoutMs?: number
    memoryBytes?: number
    maxRequestBodyBytes?: number
    maxResponseBodyBytes?: number
    maxConcurrentRequests?: number
    maxQueuedRequests?: number
  }
}

export type LocalHosts = {
  /**
   * Load (or reload) the application into the worker from `image` with these variable values
   * (name to value) and its own limits (over `limits`); resolves once the load is under way, not done. Throws when the artifact
   * cannot be re-locked.
   */
  deploy(
    app: { id: string },
    image: string,
    variables?: Record<string, string> | Promise<Record<string, string>>,
    own?: AppLimits,
  ): Promise<void>
  /** What runs for the application now, or null when nothing was deployed in this process. */
  status(appId: string): DeploymentStatus | null
  /** The application's URL once loaded (waiting up to `timeoutMs`); null when it is not deployed, an Error saying why when it cannot answer. */
  url(appId: string, timeoutMs: number): Promise<string | null | Error>
  /** As `url`, with the kept-alive connections of what answers there (retired when it is replaced). */
  target(appId: string, timeoutMs: number): Promise<{ url: string; connections: Connections } | null | Error>
  log(appId: string, options: { follow: boolean; tailLines?: number | undefined }): Readable | null
  remove(appId: string): Promise<void>
  /** The worker's counters by application (worker/README.md, `stats`); null while no worker runs. */
  stats(): Promise<Record<string, AppStats> | null>
  /** Stop a worker (or a host of old) a previous process left running (it was killed outright), by the pid files. */
  reapOrphans(): void
  close(): Promise<void>
}

/** What an application sets for itself: the memory each of its instances may grow to, its share of the worker's requests. */
type AppLimits = {
  memoryBytes?: number | undefined
  maxConcurrentRequests?: number | undefined
  maxQueuedRequests?: number | undefined
}

type Instance = {
  appId: string
  own: AppLimits
  /** What runs: the image re-locked with the variables' names (the image itself when there are none). */
  image: string
  variables: Record<string, string>
  /** The pulled application, once pulled. */
  unpacked: UnpackedSpinApp | null
  log: LogBuffer
  url: string | null
  /** The connections to what answers at `url`; null when nothing does. */
  connections: Connections | null
  /** A redeploy under way: `url` is the previous version's, answering until this one is loaded. */
  replacing: boolean
  /** The port it had: a reload (after a redeploy or a worker restart) asks for it again, so the URL stays. */
  port: number
  /** Why it does not answer, when it does not. */
  problem: string | null
  /** Settles when the current load ends (loaded or failed); replaced at each load. */
  loading: Promise<void>
  loaded: () => void
  /** The worker is down and will come back: a wait goes on. */
  waitingForWorker: boolean
  /** Unloaded for want of requests (the worker's `idle`): its port stays, the worker loads it at the next request. */
  idle: boolean
}

const DEFAULT_BACKOFF = { initialMs: 1000, maxMs: 30_000 }

export function createLocalHosts(deps: LocalHostsDeps): LocalHosts {
  const { logger } = deps
  const instances = new Map<string, Instance>()
  /** Per application, the worker commands in order: the worker runs commands side by side. */
  const queues = new Map<string, Promise<void>>()
  const wasmDir = join(deps.dir, 'wasm')
  const ports = openPortBook(join(deps.dir, 'ports.json'))
  // Each application's log, kept across restarts (log-buffer.ts); ids are the API's UUIDs.
  const logsDir = join(deps.dir, 'logs')
  mkdirSync(logsDir, { recursive: true, mode: 0o700 })
  const logFile = (appId: string): string | undefined =>
    /^[A-Za-z0-9-]{1,64}$/.test(appId) ? join(logsDir, `${appId}.log`) : undefined
  const storeOptions = {
    dockerConfigDir: deps.registry?.dockerConfigDir ?? null,
    insecure: deps.registry?.insecure ?? false,
  }
  let closing = false

  const worker = createWorker({
    logger,
    program: deps.worker,
    args: [
      '--cache-dir',
      deps.cacheDir,
      ...((deps.allowPrivateOutbound ?? []).length > 0
        ? ['--allow-private-outbound', (deps.allowPrivateOutbound ?? []).join(',')]
        : []),
      ...(deps.threads === undefined ? [] : ['--threads', String(deps.threads)]),
      ...(deps.memoryBudgetBytes === undefined ? [] : ['--memory-budget-bytes', String(deps.memoryBudgetBytes)]),
    ],
    cwd: deps.dir,
    pidFile: join(deps.dir, 'worker.pid'),
    restartBackoff: deps.restartBackoff ?? DEFAULT_BACKOFF,
    onLog: routeLog,
    onEvent(event) {
      const instance = typeof event.app === 'string' ? instances.get(event.app) : undefined
      if (event.event !== 'awake' || instance === undefined || !instance.idle) return
      instance.idle = false
      idleTracker.loaded(instance.appId)
      instance.log.write(
        Buffer.from(
          `${JSON.stringify({ time: Date.now(), level: 'info', msg: 'loaded again by a request at its URL' })}\n`,
        ),
      )
    },
    onDown(problem) {
      for (const instance of instances.values()) {
        instance.url = null
        instance.replacing = false
        instance.connections?.retire()
        instance.connections = null
        instance.problem = problem
        instance.waitingForWorker = true
        instance.log.write(Buffer.from(`${JSON.stringify({ time: Date.now(), level: 'warn', msg: problem })}\n`))
        // Whoever waits for this load learns the worker went; a new wait covers the reload.
        const ended = instance.loaded
        newLoading(instance)
        ended()
      }
    },
    onRestart() {
      for (const instance of instances.values()) {
        // An idle application is loaded (its port answers again) and let go at once (load()).
        instance.waitingForWorker = false
        instance.log.write(
          Buffer.from(
            `${JSON.stringify({ time: Date.now(), level: 'info', msg: 'the worker restarted; loading the application again' })}\n`,
          ),
        )
        void enqueue(instance.appId, () => load(instance))
      }
    },
  })

  const idleTimeoutMs = deps.idle?.timeoutMs ?? 0
  const now = deps.idle?.now ?? Date.now
  const idleTracker = createIdleTracker(idleTimeoutMs, now)
  const sweeper =
    idleTimeoutMs > 0
      ? setInterval(
          () => {
            void sweep()
          },
          deps.idle?.sweepMs ?? Math.min(30_000, Math.max(1000, idleTimeoutMs / 4)),
        )
      : null
  sweeper?.unref()

  // One sweep at a time: a slow one ending after a newer one would hand the tracker old counts.
  let sweeping = false
  async function sweep(): Promise<void> {
    const loaded = [...instances.values()].filter((instance) => instance.url !== null && !instance.idle)
    if (sweeping || closing || !worker.running() || loaded.length === 0) return
    let apps: Record<string, AppStats | undefined>
    sweeping = true
    try {
      apps = (await worker.send({ op: 'stats' })).apps
    } catch {
      return
    } finally {
      sweeping = false
    }
    const counts = new Map(loaded.map((instance) => [instance.appId, apps[instance.appId]?.requests ?? 0]))
    for (const appId of idleTracker.idle(counts)) {
      const instance = instances.get(appId)
      if (instance !== undefined) void enqueue(appId, () => unloadIdle(instance))
    }
    deps.idle?.swept?.(counts)
  }

  async function unloadIdle(instance: Instance): Promise<void> {
    // A redeploy under way: the version it replaces goes with it.
    if (!current(instance) || instance.url === null || instance.idle || instance.replacing) return
    instance.idle = true
    idleTracker.forget(instance.appId)
    // The worker keeps the port and the compiled file: the next request there loads it again.
    await worker.send({ op: 'idle', app: instance.appId }).catch(() => {})
    const message = `idle for ${Math.round(idleTimeoutMs / 1000)} s: unloaded; the next request loads it again`
    instance.log.write(Buffer.from(`${JSON.stringify({ time: Date.now(), level: 'info', msg: message })}\n`))
    logger.info({ appId: instance.appId, idleMs: idleTimeoutMs }, 'local deployment idle: unloaded')
  }

  function routeLog(line: WorkerLogLine, raw: string): void {
    const instance = typeof line.app === 'string' ? instances.get(line.app) : undefined
    if (instance === undefined) {
      if (line.level === 'error' || line.level === 'warn') logger.warn({ worker: line }, 'local worker')
      else logger.debug({ worker: line }, 'local worker')
      return
    }
    // A function's own output as it printed it; the worker's lines about it as they are.
    const text = line.msg === 'guest output' && typeof line.line === 'string' ? line.line : raw
    instance.log.write(Buffer.from(`${text}\n`))
  }

  function newLoading(instance: Instance): void {
    instance.loading = new Promise((resolve) => {
      instance.loaded = resolve
    })
  }

  function enqueue(appId: string, step: () => Promise<void>): Promise<void> {
    const next = (queues.get(appId) ?? Promise.resolve()).then(step, step)
    const settled = next.catch(() => {})
    queues.set(appId, settled)
    void settled.then(() => {
      if (queues.get(appId) === settled) queues.delete(appId)
    })
    return next
  }

  const current = (instance: Instance): boolean => instances.get(instance.appId) === instance && !closing

  async function load(instance: Instance): Promise<void> {
    if (!current(instance)) return
    try {
      instance.unpacked ??= await unpackSpinApp(instance.image, wasmDir, storeOptions)
      if (!current(instance)) return
      const { lockedApp, components } = instance.unpacked
      const started = Date.now()
      // The application's own values over the platform's; an absent one is no value (JSON drops undefined).
      const own = Object.fromEntries(Object.entries(instance.own).filter(([, value]) => value !== undefined))
      const limits = { ...deps.limits, ...own }
      const reply = await worker.send({
        op: 'load',
        app: instance.appId,
        lock: lockedApp,
        components,
        variables: instance.variables,
        port: instance.port,
        ...(Object.keys(limits).length === 0 ? {} : { limits }),
      })
      if (!current(instance)) return
      instance.url = String(reply.url)
      instance.port = Number(new URL(instance.url).port)
      ports.set(instance.appId, instance.port)
      instance.problem = null
      instance.replacing = false
      // The previous version's connections close once their requests end.
      instance.connections?.retire()
      instance.connections = createConnections()
      // Idle before a worker restart: its port answers again, what it holds goes again.
      if (instance.idle) await worker.send({ op: 'idle', app: instance.appId })
      else idleTracker.loaded(instance.appId)
      logger.info({ appId: instance.appId, url: instance.url, ms: Date.now() - started }, 'local deployment ready')
    } catch (error) {
      // A worker that went down says so itself (onDown), and the wait goes on for its restart.
      if (!current(instance) || instance.waitingForWorker) return
      // The port it had is another program's now: any port rather than no answer.
      if (instance.port !== 0 && /address already in use/i.test((error as Error).message)) {
        logger.warn(
          { appId: instance.appId, port: instance.port },
          'the port the application had is taken; it gets another',
        )
        instance.port = 0
        return await load(instance)
      }
      // A redeploy that fails leaves the previous version loaded in the worker: it answers on.
      if (!instance.replacing) instance.url = null
      instance.problem = `the application could not be loaded: ${(error as Error).message}`
      instance.log.write(
        Buffer.from(`${JSON.stringify({ time: Date.now(), level: 'error', msg: instance.problem })}\n`),
      )
      logger.warn({ appId: instance.appId, reason: (error as Error).message }, 'local deployment could not be loaded')
    }
    instance.loaded()
  }

  async function unload(appId: string, paths: string[]): Promise<void> {
    if (worker.running()) {
      await worker.send({ op: 'unload', app: appId, prune: true }).catch((error: unknown) => {
        logger.warn({ appId, reason: (error as Error).message }, 'the worker could not unload an application')
      })
    }
    // The pulled wasm no other application uses.
    const used = new Set([...instances.values()].flatMap((other) => Object.values(other.unpacked?.components ?? {})))
    for (const path of paths) if (!used.has(path)) rmSync(path, { force: true })
  }

  async function target(
    appId: string,
    timeoutMs: number,
  ): Promise<{ url: string; connections: Connections } | null | Error> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const instance = instances.get(appId)
      if (instance === undefined) return null
      idleTracker.touch(appId)
      if (instance.url !== null && instance.connections !== null)
        return { url: instance.url, connections: instance.connections }
      const waitMs = deadline - Date.now()
      if (waitMs <= 0) return new Error(instance.problem ?? 'the application is still loading')
      let timer: NodeJS.Timeout | undefined
      const loading = instance.loading
      const settled = await Promise.race([
        loading.then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), waitMs)
        }),
      ])
      clearTimeout(timer)
      if (instance.url !== null && instance.connections !== null)
        return { url: instance.url, connections: instance.connections }
      // Replaced (a redeploy) or restored (a failed one): wait for whichever is current now.
      if (instances.get(appId) !== instance) continue
      // The load failed and no worker restart is coming: say why.
      if (settled && !instance.waitingForWorker && instance.loading === loading)
        return new Error(instance.problem ?? 'the application is not loaded')
    }
  }

  return {
    async stats() {
      if (closing || !worker.running()) return null
      return (await worker.send({ op: 'stats' })).apps
    },
    async deploy(app, image, variables = {}, own = {}) {
      if (closing) return
      const previous = instances.get(app.id)
      // Registered at once: a request that comes meanwhile goes to the previous version, or
      // waits for this load when none answers.
      // A redeploy: the previous version answers at its URL (idle or not) until this one is loaded.
      const answering = previous?.url != null && previous.connections !== null ? previous : undefined
      const instance: Instance = {
        appId: app.id,
        own,
        image,
        variables: {},
        unpacked: null,
        log: createLogBuffer(MAX_APP_LOG_BYTES, logFile(app.id)),
        port: previous?.port ?? ports.get(app.id),
        url: answering?.url ?? null,
        connections: answering?.connections ?? null,
        replacing: answering !== undefined,
        problem: null,
        loading: Promise.resolve(),
        loaded: () => {},
        waitingForWorker: false,
        idle: false,
      }
      newLoading(instance)
      instances.set(app.id, instance)
      let values: Record<string, string>
      try {
        values = await variables
        const names = Object.keys(values).sort()
        instance.image = await relockReference(image, names, storeOptions)
        if (names.length > 0)
          logger.info(
            { appId: app.id, image, relocked: instance.image, variables: names },
            'variables declared in the artifact',
          )
      } catch (error) {
        // An artifact that cannot be relocked leaves what runs alone.
        if (instances.get(app.id) === instance) {
          if (previous === undefined) instances.delete(app.id)
          else instances.set(app.id, previous)
        }
        instance.loaded()
        throw error
      }
      instance.variables = values
      if (previous !== undefined) {
        previous.log.end()
        previous.loaded()
      }
      // The worker replaces a loaded application at its load: the old one answers until then.
      void enqueue(app.id, () => load(instance))
    },
    status(appId) {
      const instance = instances.get(appId)
      if (instance === undefined) return null
      // Ready: the image deployed is what answers, not the version it replaces.
      const ready = instance.url !== null && !instance.replacing
      const idle = ready && instance.idle
      const previous = instance.replacing ? '; the previous version answers meanwhile' : ''
      return {
        image: instance.image,
        running: instance.url !== null || (instance.problem === null && !closing),
        ready,
        idle,
        url: instance.url,
        message:
          instance.problem !== null
            ? `${instance.problem}${previous}`
            : idle
              ? `idle: unloaded after ${Math.round(idleTimeoutMs / 1000)} s without a request; the next request loads it again`
              : ready
                ? '1 of 1 replicas ready'
                : `loading the application into the worker${previous}`,
      }
    },
    async url(appId, timeoutMs) {
      const found = await target(appId, timeoutMs)
      return found === null || found instanceof Error ? found : found.url
    },
    target,
    log(appId, options) {
      return instances.get(appId)?.log.open(options) ?? null
    },
    async remove(appId) {
      const instance = instances.get(appId)
      if (instance === undefined) return
      instances.delete(appId)
      ports.delete(appId)
      instance.log.end()
      const file = logFile(appId)
      if (file !== undefined) rmSync(file, { force: true })
      instance.connections?.retire()
      instance.loaded()
      await enqueue(appId, () => unload(appId, Object.values(instance.unpacked?.components ?? {})))
    },
    reapOrphans() {
      let files: string[]
      try {
        files = readdirSync(deps.dir).filter((file) => file.endsWith('.pid'))
      } catch {
        return
      }
      for (const file of files) {
        const pid = Number(readFileSync(join(deps.dir, file), 'utf8').trim())
        rmSync(join(deps.dir, file), { force: true })
        // Only a process whose command line is our worker's: the pid may have been reused.
        let cmdline = ''
        try {
          cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
        } catch {
          continue
        }
        if (!Number.isInteger(pid) || pid <= 1 || !cmdline.includes(`--cache-dir\0${deps.cacheDir}\0`)) continue
        try {
          process.kill(-pid, 'SIGKILL')
          logger.warn({ pid }, 'stopped a worker a previous control plane left running')
        } catch {
          // Gone meanwhile.
        }
      }
    },
    async close() {
      closing = true
      if (sweeper !== null) clearInterval(sweeper)
      for (const instance of instances.values()) {
        instance.log.end()
        instance.connections?.retire()
        instance.loaded()
      }
      instances.clear()
      await worker.close()
    },
  }
}
