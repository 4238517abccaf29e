// The runtime on this machine (local.ts) as the domain sees it: builds queued for the builder
// program, applications served on loopback, their output kept in memory, secret values sealed
// in the database. A secretRef names a Kubernetes Secret, which there is none of here.
import type { LocalRuntimeConfig } from './settings.js'
import { NotFoundError, UnavailableError } from '@session-relay/common/errors'
import type { StoredVariable } from '../model/app-settings.js'
import type { DeploymentT } from '../model/resources.js'
import type { Runtime } from '../runtime/runtime.js'
import type { Carrier } from '../runtime/send-invoke.js'
import { direct, sendInvoke } from '../runtime/send-invoke.js'
import { storedBuildLog } from '../store/builds.js'
import type { Database } from '../store/db.js'
import { sealVariable } from '../store/secret-box.js'
import type { Connections } from './connections.js'
import type { DeploymentStatus } from './hosts.js'
import type { LocalRuntime } from './local.js'

export function localRuntime(config: LocalRuntimeConfig, db: Database, local: LocalRuntime): Runtime {
  // One carrier per loaded generation: its URL parsed once, not at every invoke.
  const carriers = new WeakMap<Connections, Carrier>()
  const carrierFor = ({ url, connections }: { url: string; connections: Connections }): Carrier => {
    let carrier = carriers.get(connections)
    if (carrier === undefined) carriers.set(connections, (carrier = direct(url, connections.agent)))
    return carrier
  }
  return {
    async checkBuild(language) {
      const missing = await local.cannotBuild(language)
      if (missing !== null) throw new UnavailableError(missing)
      // Refused now, naming what to build, rather than a build that can only fail.
      local.builder()
    },
    startBuild: (app, buildId, archive) =>
      new Promise((resolve) => resolve(local.builds.start(app, buildId, local.imageRefFor(app, buildId), archive))),
    async buildLog(buildId, finished, options) {
      const live = local.builds.log(buildId, options)
      if (live !== null) return { kind: 'stream', upstream: live }
      // It ended between the two reads: its log is in the database now.
      const stored = await storedBuildLog(db, buildId)
      if (stored !== undefined) return { kind: 'text', text: stored }
      throw new NotFoundError(
        finished
          ? 'no log was kept: the build ended before its builder ran'
          : 'no log: this build is not running on this machine',
      )
    },
    logPollMs: 1000,
    checkDeploy: () => {},
    deploy: async (app, image) => {
      await local.deploy(app, image)
      return {}
    },
    // What this process's worker runs is in its memory: after a restart of the control plane
    // nothing is, whatever the database says was applied before.
    drifted: (app) => Promise.resolve(local.hosts.status(app.id) === null),
    deployment: (app, image) =>
      new Promise((resolve) => {
        const deployment = localDeployment(app.name, image, local.hosts.status(app.id))
        const unresolved = Object.keys(app.settings.variables)
          .sort()
          .filter((name) => 'secretRef' in (app.settings.variables[name] as StoredVariable))
        if (unresolved.length > 0)
          deployment.message += `; not given to the function here (a secretRef needs a cluster): ${unresolved.join(', ')}`
        resolve(deployment)
      }),
    async invoke(app, request) {
      const target = await local.hosts.target(app.id, config.invokeTimeoutMs)
      if (target === null) throw notDeployedHere()
      if (target instanceof Error) throw new UnavailableError(`application unreachable: ${target.message}`)
      const done = target.connections.use()
      try {
        return await sendInvoke(carrierFor(target), request, config.invokeTimeoutMs)
      } finally {
        done()
      }
    },
    openLog: (app, options) =>
      new Promise((resolve) => {
        const log = local.hosts.log(app.id, options)
        if (log === null) throw notDeployedHere()
        resolve(log)
      }),
    storeSecrets: (app, secrets) =>
      new Promise((resolve) => {
        const stored: Record<string, StoredVariable> = {}
        for (const [name, secret] of secrets) {
          const before = app.settings.variables[name] as { secret: true; sealed?: string }
          const sealed = secret === true ? before.sealed : sealVariable(config, app.id, name, secret)
          stored[name] = sealed === undefined ? { secret: true } : { secret: true, sealed }
        }
        resolve(stored)
      }),
    remove: (app) => local.forget(app),
    close: () => local.close(),
  }
}

function notDeployedHere(): NotFoundError {
  return new NotFoundError('application is not deployed: it has no successful build yet')
}

/** A local deployment in the API's shape: one replica, no namespace; its loopback URL is the internal and the public address (the machine's user reaches it there). */
function localDeployment(name: string, image: string, status: DeploymentStatus | null): DeploymentT {
  return {
    image: status?.image ?? image,
    imageSizeBytes: null,
    replicas: 1,
    // Scaled to zero: nothing runs, yet it answers (the first request loads it), as Knative
    // shows a service scaled to zero ready.
    observedReplicas: status?.running === true && !status.idle ? 1 : 0,
    ready: status?.ready ?? false,
    namespace: '',
    serviceName: name,
    internalUrl: status?.url ?? '',
    publicUrl: status?.url ?? null,
    message: status?.message ?? 'not running: POST deploy starts it',
  }
}
