// Follows the SpinApps the control plane applied and asks for a reconcile of an application
// whose SpinApp was deleted or whose spec changed (its metadata.generation moved): an edit by
// hand is undone within a round trip, not at the next resync. Status updates (the operator's)
// change no generation and ask for nothing. A watch that ends is started again after a pause;
// what it missed meanwhile the periodic resync (domain/reconcile.ts) finds. The list-then-watch
// loop is cluster/watch-loop.ts.
import type { Logger } from '../logger.js'
import { APPLICATION_LABEL, MANAGED_BY } from './build-jobs.js'
import type { Kube } from './kube.js'
import { watchLoop } from './watch-loop.js'

const SELECTOR = `app.kubernetes.io/managed-by=${MANAGED_BY['app.kubernetes.io/managed-by']}`

type Watched = { metadata?: { name?: string; generation?: number; labels?: Record<string, string> } }

export type SpinAppWatch = { close(): Promise<void> }

export function watchSpinApps(deps: {
  kube: Kube
  logger: Logger
  /** Asked with the application's id. */
  changed: (appId: string) => void
  retryMs?: number | undefined
}): SpinAppWatch {
  const { kube } = deps
  const generations = new Map<string, number>()

  const seen = (type: string, object: Watched): void => {
    const name = object.metadata?.name
    const appId = object.metadata?.labels?.[APPLICATION_LABEL]
    if (name === undefined || appId === undefined) return
    if (type === 'DELETED') {
      generations.delete(name)
      deps.changed(appId)
      return
    }
    const generation = object.metadata?.generation ?? 0
    const before = generations.get(name)
    generations.set(name, generation)
    // The first sight of one (ADDED, or after a new watch) says nothing changed.
    if (type === 'MODIFIED' && before !== undefined && before !== generation) deps.changed(appId)
  }

  // The generations now, and where to watch from.
  const list = async (): Promise<string> => {
    const listed = (await kube.custom.listNamespacedCustomObject({
      group: 'core.spinkube.dev',
      version: 'v1alpha1',
      namespace: kube.namespace,
      plural: 'spinapps',
      labelSelector: SELECTOR,
    })) as { items?: Watched[]; metadata?: { resourceVersion?: string } }
    generations.clear()
    for (const item of listed.items ?? []) {
      if (item.metadata?.name !== undefined) generations.set(item.metadata.name, item.metadata.generation ?? 0)
    }
    return listed.metadata?.resourceVersion ?? ''
  }

  // No SpinApp CRD yet, or the cluster unreachable: the resync still runs, so quietly.
  return watchLoop<Watched>({
    kube,
    logger: deps.logger,
    path: `/apis/core.spinkube.dev/v1alpha1/namespaces/${kube.namespace}/spinapps`,
    labelSelector: SELECTOR,
    list,
    event: seen,
    level: 'debug',
    watchFailed: 'SpinApp watch ended; watching again',
    listFailed: 'cannot list SpinApps; trying again',
    retryMs: deps.retryMs,
  })
}
