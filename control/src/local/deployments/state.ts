// One application's deployment on this machine as a state machine: every state it can be in,
// and every move between them in `transition`, the one place a deployment's state changes.
//
//   loading ──loaded──▶ ready ──idled──▶ idle
//      │                  ▲ ◀──awake────┘
//      └──load-failed──▶ failed
//   any ──worker-down──▶ worker-down ──worker-back──▶ loading (idle again once loaded, if it was)
//
// A redeploy is a new deployment that starts `loading` with the previous version `answering`
// (its URL and connections) until it is loaded; a failed redeploy keeps the previous one
// answering. An event that comes late (the state moved on meanwhile) changes nothing.
import type { Connections } from '../connections.js'

/** What answers at the application's URL: a loaded version and its kept-alive connections. */
export type Answering = { url: string; connections: Connections }

export type DeploymentState =
  /** A load under way. `answering`: the previous version, during a redeploy; `problem`: why nothing answered before (the worker went). */
  | { name: 'loading'; answering: Answering | null; problem: string | null; idleOnceLoaded: boolean }
  | { name: 'ready'; answering: Answering }
  /** Unloaded for want of requests: its URL answers still, the worker loading it at the next request. */
  | { name: 'idle'; answering: Answering }
  /** The load failed; a failed redeploy leaves the previous version answering. */
  | { name: 'failed'; answering: Answering | null; problem: string }
  /** The worker exited and waits for its restart: nothing answers. */
  | { name: 'worker-down'; problem: string; wasIdle: boolean }

export type DeploymentEvent =
  | { type: 'loaded'; answering: Answering }
  | { type: 'load-failed'; problem: string }
  | { type: 'idled' }
  | { type: 'awake' }
  | { type: 'worker-down'; problem: string }
  | { type: 'worker-back' }

export const initialState = (previous: Answering | null): DeploymentState => ({
  name: 'loading',
  answering: previous,
  problem: null,
  idleOnceLoaded: false,
})

export function transition(state: DeploymentState, event: DeploymentEvent): DeploymentState {
  switch (event.type) {
    case 'loaded':
      // A load again over a loaded one (a restart's reload racing an earlier load) is a load too.
      if (state.name === 'worker-down') return state
      return (state.name === 'loading' && state.idleOnceLoaded) || state.name === 'idle'
        ? { name: 'idle', answering: event.answering }
        : { name: 'ready', answering: event.answering }
    case 'load-failed':
      return state.name === 'loading' ? { name: 'failed', answering: state.answering, problem: event.problem } : state
    case 'idled':
      return state.name === 'ready' ? { name: 'idle', answering: state.answering } : state
    case 'awake':
      return state.name === 'idle' ? { name: 'ready', answering: state.answering } : state
    case 'worker-down':
      return {
        name: 'worker-down',
        problem: event.problem,
        wasIdle: state.name === 'idle' || (state.name === 'loading' && state.idleOnceLoaded),
      }
    case 'worker-back':
      return state.name === 'worker-down'
        ? { name: 'loading', answering: null, problem: state.problem, idleOnceLoaded: state.wasIdle }
        : state
  }
}

export const answeringOf = (state: DeploymentState): Answering | null =>
  state.name === 'worker-down' ? null : state.answering

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

/** The status the API shows for a deployment in `state`; `closing`: the local runtime is shutting down. */
export function statusOf(
  state: DeploymentState,
  image: string,
  options: { idleTimeoutMs: number; closing: boolean },
): DeploymentStatus {
  const answering = answeringOf(state)
  const problem =
    state.name === 'loading' || state.name === 'failed' || state.name === 'worker-down' ? state.problem : null
  // Ready: the image deployed is what answers, not the version it replaces.
  const ready = state.name === 'ready' || state.name === 'idle'
  const previous = !ready && answering !== null ? '; the previous version answers meanwhile' : ''
  return {
    image,
    running: answering !== null || (problem === null && !options.closing),
    ready,
    idle: state.name === 'idle',
    url: answering?.url ?? null,
    message:
      problem !== null
        ? `${problem}${previous}`
        : state.name === 'idle'
          ? `idle: unloaded after ${Math.round(options.idleTimeoutMs / 1000)} s without a request; the next request loads it again`
          : ready
            ? '1 of 1 replicas ready'
            : `loading the application into the worker${previous}`,
  }
}
