// A deployment's conditions in the Kubernetes style, and the one message the API derives from
// them: pure, so every replica that reads the same row answers the same.
import type { ConditionT, DeploymentT } from '../model/resources.js'

export type ConditionChange = Omit<ConditionT, 'lastTransitionTime'>

const ORDER: ReadonlyArray<ConditionT['type']> = ['Deployed', 'Ready']

/**
 * `conditions` with `change` in place of its type's: the transition time is `now` when the
 * status changed (or the condition is new), else the one it had, as Kubernetes keeps it.
 */
export function setCondition(conditions: readonly ConditionT[], change: ConditionChange, now: Date): ConditionT[] {
  const before = conditions.find((condition) => condition.type === change.type)
  const lastTransitionTime =
    before !== undefined && before.status === change.status ? before.lastTransitionTime : now.toISOString()
  const next = [...conditions.filter((condition) => condition.type !== change.type), { ...change, lastTransitionTime }]
  return next.sort((a, b) => ORDER.indexOf(a.type) - ORDER.indexOf(b.type))
}

/** True when setting `change` would change what is stored (status, reason or message). */
export function differs(conditions: readonly ConditionT[], change: ConditionChange): boolean {
  const before = conditions.find((condition) => condition.type === change.type)
  return (
    before === undefined ||
    before.status !== change.status ||
    before.reason !== change.reason ||
    before.message !== change.message
  )
}

/** The Ready condition of what the runtime reports now. */
export function readyCondition(live: Pick<DeploymentT, 'ready' | 'message'>): ConditionChange {
  return live.ready
    ? { type: 'Ready', status: 'True', reason: 'Answering', message: live.message }
    : { type: 'Ready', status: 'False', reason: 'NotAnswering', message: live.message }
}

/**
 * The deployment's message: what the runtime says of what runs, after why the newest build or
 * settings are not applied when the stored Deployed condition says they are not.
 */
export function deploymentMessage(conditions: readonly ConditionT[], live: string): string {
  const deployed = conditions.find((condition) => condition.type === 'Deployed')
  if (deployed === undefined || deployed.status !== 'False') return live
  return `the newest build is not deployed (${deployed.message}); retried with back-off, or POST deploy tries again now; ${live}`
}
