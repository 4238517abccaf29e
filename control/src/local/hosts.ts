// Deployments on this machine: every application loaded into the one worker process
// (worker/README.md), each on its own loopback port, as the SpinApps' pods do in a cluster. A
// deploy pulls the artifact into the worker's directory (its wasm files by digest) and loads it;
// a redeploy loads again on the same port and is atomic for callers: the previous version
// answers (invoke and its URL) until the worker has the new one ready and swaps it in place,
// requests in flight finishing on the old one (worker/README.md); delete unloads and
// prunes. The worker's log lines naming an application are that application's log. A worker
// that exits on its own is restarted after a backoff (worker-client/process.ts) and every
// application loaded again; meanwhile each deployment says why it does not answer.
// Variables reach the worker in the `load` command, from memory, never through an environment
// or a file, and the artifact is re-locked to declare exactly their names
// (spin/src/relock.ts): a new value or a new name is a reload, never a rebuild. Values are
// never logged. An application idle past the timeout is let go by the worker, which keeps its
// port and loads it again at the next request (its `awake` event says so).
//
// Where a deployment's state is decided: deployments/state.ts. This module composes the worker
// client (worker-client/), each application's deployment (deployments/deployment.ts, loaded
// by deployments/load.ts) and the helpers: the idle sweep, log routing, wasm file clean-up.
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { relockReference } from '@session-relay/spin/relock'
import { childTraceEnv } from '../tracing/configured.js'
import type { LocalHosts, LocalHostsDeps } from './deployments/api.js'
import { workerArgs } from './deployments/api.js'
import type { Deployment } from './deployments/deployment.js'
import { createDeployment, move, wake } from './deployments/deployment.js'
import { startIdleSweep } from './deployments/idle-sweep.js'
import { load } from './deployments/load.js'
import { appLogFile, note, routeWorkerLog } from './deployments/log-routing.js'
import type { Answering, DeploymentStatus } from './deployments/state.js'
import { answeringOf, statusOf } from './deployments/state.js'
import { waitForAnswer } from './deployments/wait.js'
import { removeUnusedWasm } from './deployments/wasm-files.js'
import { createIdleTracker } from './idle.js'
import { createLogBuffer } from './log-buffer.js'
import { openPortBook } from './ports.js'
import { reapOrphans } from './worker-client/orphans.js'
import { createWorker } from './worker-client/process.js'
import { createKeyedQueue } from './worker-client/queue.js'

export type { DeploymentStatus, LocalHosts, LocalHostsDeps }

const MAX_APP_LOG_BYTES = 1024 * 1024

const DEFAULT_BACKOFF = { initialMs: 1000, maxMs: 30_000 }

export function createLocalHosts(deps: LocalHostsDeps): LocalHosts {
  const { logger } = deps
  const deployments = new Map<string, Deployment>()
  const queue = createKeyedQueue()
  const ports = openPortBook(join(deps.dir, 'ports.json'))
  // Each application's log, kept across restarts (log-buffer.ts); ids are the API's UUIDs.
  const logsDir = join(deps.dir, 'logs')
  mkdirSync(logsDir, { recursive: true, mode: 0o700 })
  const storeOptions = {
    dockerConfigDir: deps.registry?.dockerConfigDir ?? null,
    insecure: deps.registry?.insecure ?? false,
  }
  const restartListeners: (() => void)[] = []
  let closing = false

  const worker = createWorker({
    logger,
    program: deps.worker,
    args: workerArgs(deps),
    // Its spans go where the control plane's go (worker/README.md, "Traces").
    env: childTraceEnv(process.env),
    cwd: deps.dir,
    pidFile: join(deps.dir, 'worker.pid'),
    restartBackoff: deps.restartBackoff ?? DEFAULT_BACKOFF,
    onLog: routeWorkerLog(logger, (appId) => deployments.get(appId)?.log),
    onEvent(event) {
      const deployment = deployments.get(event.app)
      if (event.event !== 'awake' || deployment?.state.name !== 'idle') return
      move(deployment, { type: 'awake' })
      idleTracker.loaded(deployment.appId)
      note(deployment.log, 'info', 'loaded again by a request at its URL')
    },
    onDown(problem) {
      for (const deployment of deployments.values()) {
        move(deployment, { type: 'worker-down', problem })
        note(deployment.log, 'warn', problem)
      }
    },
    onRestart() {
      for (const deployment of deployments.values()) {
        // An idle application is loaded (its port answers again) and let go at once (load.ts).
        move(deployment, { type: 'worker-back' })
        note(deployment.log, 'info', 'the worker restarted; loading the application again')
        void queue.enqueue(deployment.appId, () => load(loadDeps, deployment))
      }
      for (const listener of restartListeners) {
        try {
          listener()
        } catch (error) {
          logger.error({ reason: (error as Error).message }, 'a listener to the worker restart failed')
        }
      }
    },
  })

  const idleTimeoutMs = deps.idle?.timeoutMs ?? 0
  const idleTracker = createIdleTracker(idleTimeoutMs, deps.idle?.now ?? Date.now)
  const current = (deployment: Deployment): boolean => deployments.get(deployment.appId) === deployment && !closing
  const loadDeps = {
    logger,
    worker,
    ports,
    wasmDir: join(deps.dir, 'wasm'),
    storeOptions,
    limits: deps.limits ?? {},
    current,
    answering: (appId: string) => idleTracker.loaded(appId),
  }

  const stopSweep =
    idleTimeoutMs > 0
      ? startIdleSweep({
          tracker: idleTracker,
          sweepMs: deps.idle?.sweepMs ?? Math.min(30_000, Math.max(1000, idleTimeoutMs / 4)),
          loaded: () =>
            [...deployments.values()]
              .filter((deployment) => answeringOf(deployment.state) !== null && deployment.state.name !== 'idle')
              .map((deployment) => deployment.appId),
          requests: async () => (closing || !worker.running() ? null : (await worker.send({ op: 'stats' })).apps),
          unload(appId) {
            const deployment = deployments.get(appId)
            if (deployment !== undefined) void queue.enqueue(appId, () => unloadIdle(deployment))
          },
          swept: deps.idle?.swept,
        })
      : () => {}

  async function unloadIdle(deployment: Deployment): Promise<void> {
    // A redeploy under way: the version it replaces goes with it.
    if (!current(deployment) || deployment.state.name !== 'ready') return
    move(deployment, { type: 'idled' })
    idleTracker.forget(deployment.appId)
    // The worker keeps the port and the compiled file: the next request there loads it again.
    await worker.send({ op: 'idle', app: deployment.appId }).catch(() => {})
    note(
      deployment.log,
      'info',
      `idle for ${Math.round(idleTimeoutMs / 1000)} s: unloaded; the next request loads it again`,
    )
    logger.info({ appId: deployment.appId, idleMs: idleTimeoutMs }, 'local deployment idle: unloaded')
  }

  async function unload(appId: string, paths: string[]): Promise<void> {
    if (worker.running()) {
      await worker.send({ op: 'unload', app: appId, prune: true }).catch((error: unknown) => {
        logger.warn({ appId, reason: (error as Error).message }, 'the worker could not unload an application')
      })
    }
    const inUse = [...deployments.values()].flatMap((other) => Object.values(other.unpacked?.components ?? {}))
    removeUnusedWasm(paths, inUse)
  }

  // A request on its way: the application is not idle, whatever the worker's counts say.
  async function target(appId: string, timeoutMs: number): Promise<Answering | null | Error> {
    idleTracker.touch(appId)
    const found = await waitForAnswer((id) => deployments.get(id), appId, timeoutMs)
    idleTracker.touch(appId)
    return found
  }

  return {
    async stats() {
      if (closing || !worker.running()) return null
      return (await worker.send({ op: 'stats' })).apps
    },
    async deploy(app, image, variables = {}, own = {}) {
      if (closing) return
      const previous = deployments.get(app.id)
      // Registered at once: a request that comes meanwhile goes to the previous version (idle
      // or not), answering until this one is loaded, or waits for this load when none answers.
      const deployment = createDeployment({
        appId: app.id,
        own,
        image,
        log: createLogBuffer(MAX_APP_LOG_BYTES, appLogFile(logsDir, app.id)),
        port: previous?.port ?? ports.get(app.id),
        previous: previous === undefined ? null : answeringOf(previous.state),
      })
      deployments.set(app.id, deployment)
      let values: Record<string, string>
      try {
        values = await variables
        const names = Object.keys(values).sort()
        deployment.image = await relockReference(image, names, storeOptions)
        if (names.length > 0)
          logger.info(
            { appId: app.id, image, relocked: deployment.image, variables: names },
            'variables declared in the artifact',
          )
      } catch (error) {
        // An artifact that cannot be relocked leaves what runs alone.
        if (deployments.get(app.id) === deployment) {
          if (previous === undefined) deployments.delete(app.id)
          else deployments.set(app.id, previous)
        }
        wake(deployment)
        throw error
      }
      deployment.variables = values
      if (previous !== undefined) {
        previous.log.end()
        wake(previous)
      }
      // The worker replaces a loaded application at its load: the old one answers until then.
      void queue.enqueue(app.id, () => load(loadDeps, deployment))
    },
    status(appId) {
      const deployment = deployments.get(appId)
      if (deployment === undefined) return null
      return statusOf(deployment.state, deployment.image, { idleTimeoutMs, closing })
    },
    async url(appId, timeoutMs) {
      const found = await target(appId, timeoutMs)
      return found === null || found instanceof Error ? found : found.url
    },
    target,
    log(appId, options) {
      return deployments.get(appId)?.log.open(options) ?? null
    },
    async remove(appId) {
      const deployment = deployments.get(appId)
      if (deployment === undefined) return
      deployments.delete(appId)
      ports.delete(appId)
      deployment.log.end()
      const file = appLogFile(logsDir, appId)
      if (file !== undefined) rmSync(file, { force: true })
      answeringOf(deployment.state)?.connections.retire()
      wake(deployment)
      await queue.enqueue(appId, () => unload(appId, Object.values(deployment.unpacked?.components ?? {})))
    },
    reapOrphans() {
      reapOrphans(deps.dir, deps.cacheDir, logger)
    },
    onRestart(listener) {
      restartListeners.push(listener)
    },
    async close() {
      closing = true
      stopSweep()
      for (const deployment of deployments.values()) {
        deployment.log.end()
        answeringOf(deployment.state)?.connections.retire()
        wake(deployment)
      }
      deployments.clear()
      await worker.close()
    },
  }
}
