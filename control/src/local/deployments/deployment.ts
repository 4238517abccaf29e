// One application deployed on this machine: what it runs and the state it is in (state.ts).
// Every change of state goes through `move`, which retires the connections of a version that
// no longer answers and wakes whoever waits for the deployment to change.
import type { UnpackedSpinApp } from '@session-relay/spin/unpack'
import type { LogBuffer } from '../log-buffer.js'
import type { Answering, DeploymentEvent, DeploymentState } from './state.js'
import { answeringOf, initialState, transition } from './state.js'

/** What an application sets for itself: the memory each of its instances may grow to, its share of the worker's requests. */
export type AppLimits = {
  memoryBytes?: number | undefined
  maxConcurrentRequests?: number | undefined
  maxQueuedRequests?: number | undefined
}

export type Deployment = {
  readonly appId: string
  readonly own: AppLimits
  /** What runs: the image re-locked with the variables' names (the image itself when there are none). */
  image: string
  variables: Record<string, string>
  /** The pulled application, once pulled. */
  unpacked: UnpackedSpinApp | null
  readonly log: LogBuffer
  /** The port it had: a reload (after a redeploy or a worker restart) asks for it again, so the URL stays. */
  port: number
  /** Changed by `move` only. */
  state: DeploymentState
  /** Settles at the deployment's next change: of state, or replaced, removed, closed (`wake`). */
  changed: Promise<void>
  settle: () => void
}

export function createDeployment(fields: {
  appId: string
  own: AppLimits
  image: string
  log: LogBuffer
  port: number
  /** During a redeploy, the previous version: it answers until this one is loaded. */
  previous: Answering | null
}): Deployment {
  const { previous, ...kept } = fields
  const deployment: Deployment = {
    ...kept,
    variables: {},
    unpacked: null,
    state: initialState(previous),
    changed: Promise.resolve(),
    settle: () => {},
  }
  wake(deployment)
  return deployment
}

/** Moves the deployment by `event` (state.ts); returns its new state. */
export function move(deployment: Deployment, event: DeploymentEvent): DeploymentState {
  const before = answeringOf(deployment.state)
  deployment.state = transition(deployment.state, event)
  const after = answeringOf(deployment.state)
  // A version no longer answering here: its connections close once their requests end.
  if (before !== null && before.connections !== after?.connections) before.connections.retire()
  wake(deployment)
  return deployment.state
}

/** Whoever waits for a change looks again: the deployment moved, was replaced or removed, or the runtime closes. */
export function wake(deployment: Deployment): void {
  const settle = deployment.settle
  deployment.changed = new Promise((resolve) => {
    deployment.settle = resolve
  })
  settle()
}
