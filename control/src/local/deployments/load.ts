// Loading one deployment into the worker: its artifact pulled (once), then the worker's `load`
// with its lock, wasm paths, variables, limits and the port it had. Its outcome moves the
// deployment (state.ts): loaded, or failed saying why, unless the worker went meanwhile (the
// restart loads it again).
import { createConnections } from '../connections.js'
import type { Logger } from '../../logger.js'
import type { PortBook } from '../ports.js'
import type { Worker } from '../worker-client/process.js'
import type { WorkerLimits } from '../worker-client/protocol.js'
import { unpackSpinApp } from '@session-relay/spin/unpack'
import type { Deployment } from './deployment.js'
import { move } from './deployment.js'
import { note } from './log-routing.js'

export type LoadDeps = {
  logger: Logger
  worker: Worker
  ports: PortBook
  wasmDir: string
  storeOptions: { dockerConfigDir: string | null; insecure: boolean }
  /** The platform's limits; the application's own over them. */
  limits: WorkerLimits
  /** Whether the deployment is still the application's (not replaced or removed, the runtime not closing). */
  current: (deployment: Deployment) => boolean
  /** The deployment is loaded and answers (not idle): its idle time starts. */
  answering: (appId: string) => void
}

export async function load(deps: LoadDeps, deployment: Deployment): Promise<void> {
  const { logger, worker } = deps
  if (!deps.current(deployment)) return
  try {
    deployment.unpacked ??= await unpackSpinApp(deployment.image, deps.wasmDir, deps.storeOptions)
    if (!deps.current(deployment)) return
    const { lockedApp, components } = deployment.unpacked
    const started = Date.now()
    // The application's own values over the platform's; an absent one is no value (JSON drops undefined).
    const own = Object.fromEntries(Object.entries(deployment.own).filter(([, value]) => value !== undefined))
    const limits = { ...deps.limits, ...own }
    const reply = await worker.send({
      op: 'load',
      app: deployment.appId,
      lock: lockedApp,
      components,
      variables: deployment.variables,
      port: deployment.port,
      ...(Object.keys(limits).length === 0 ? {} : { limits }),
    })
    if (!deps.current(deployment)) return
    const url = reply.url
    deployment.port = Number(new URL(url).port)
    deps.ports.set(deployment.appId, deployment.port)
    const state = move(deployment, { type: 'loaded', answering: { url, connections: createConnections() } })
    // Idle before a worker restart: its port answers again, what it holds goes again.
    if (state.name === 'idle') await worker.send({ op: 'idle', app: deployment.appId })
    else deps.answering(deployment.appId)
    logger.info({ appId: deployment.appId, url, ms: Date.now() - started }, 'local deployment ready')
  } catch (error) {
    // A worker that went down says so itself (worker-down), and the wait goes on for its restart.
    if (!deps.current(deployment) || deployment.state.name === 'worker-down') return
    const reason = (error as Error).message
    // The port it had is another program's now: any port rather than no answer.
    if (deployment.port !== 0 && /address already in use/i.test(reason)) {
      logger.warn(
        { appId: deployment.appId, port: deployment.port },
        'the port the application had is taken; it gets another',
      )
      deployment.port = 0
      return await load(deps, deployment)
    }
    const problem = `the application could not be loaded: ${reason}`
    move(deployment, { type: 'load-failed', problem })
    note(deployment.log, 'error', problem)
    logger.warn({ appId: deployment.appId, reason }, 'local deployment could not be loaded')
  }
}
