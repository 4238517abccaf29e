// The runtime of a control plane that has neither a cluster nor --runtime local: it stores and
// shows applications, and every request that needs something to run answers 503 naming the
// settings that would give it a runtime.
import { NotFoundError, UnavailableError } from '@session-relay/common/errors'
import type { Runtime } from './runtime.js'

function runtimeNotConfigured(): UnavailableError {
  return new UnavailableError(
    'cluster not configured: set PLATFORM_KUBECONFIG (or run in a cluster), or PLATFORM_RUNTIME=local to build and run on this machine',
  )
}

/** A finished build whose log was never stored: its pod went before the log was read. */
export function buildLogGone(): NotFoundError {
  return new NotFoundError("the build's log is gone: its pod was removed before the log could be saved")
}

export function noRuntime(): Runtime {
  const refuse = (): Promise<never> => Promise.reject(runtimeNotConfigured())
  return {
    checkBuild: refuse,
    startBuild: refuse,
    buildLog: (_buildId, finished) => Promise.reject(finished ? buildLogGone() : runtimeNotConfigured()),
    logPollMs: 1000,
    checkDeploy: () => {
      throw runtimeNotConfigured()
    },
    deploy: refuse,
    drifted: () => Promise.resolve(false),
    deployment: () => Promise.resolve(null),
    invoke: refuse,
    openLog: refuse,
    storeSecrets: (_app, secrets) => (secrets.size > 0 ? refuse() : Promise.resolve({})),
    remove: () => Promise.resolve(),
    close: () => Promise.resolve(),
  }
}
