// Follows the build Jobs in the cluster and moves their builds forward: running when the pod
// runs, succeeded (with the pushed image) or failed (with the reason) when the Job ends. It
// lists the Jobs, settles every build from that list, then watches from the list's
// resourceVersion; whenever the watch ends, for any reason, it lists again, so nothing missed
// while disconnected stays missed. The first list runs at start, which is what resumes the
// builds a restart interrupted. A build's end, with its log, goes to `finish`
// (domain/build-finished.ts: recorded, deployed, counted).
import type { V1Job } from '@kubernetes/client-node'
import type { Logger } from '../logger.js'
import { failed, MAX_STORED_LOG_BYTES, succeeded } from '../runtime/build-outcome.js'
import type { FinishBuild } from '../runtime/runtime.js'
import { buildStatus, markRunning, unfinishedBuilds } from '../store/builds.js'
import type { Database } from '../store/db.js'
import { BUILD_CONTAINER, BUILD_LABEL, MANAGED_BY } from './build-jobs.js'
import type { Kube } from './kube.js'
import { clusterFailure } from './kube.js'
import { containerState, listPods, readPodLog } from './pod-logs.js'
import { watchLoop } from './watch-loop.js'

const BUILD_SELECTOR = `app.kubernetes.io/managed-by=${MANAGED_BY['app.kubernetes.io/managed-by']},app.kubernetes.io/component=build`

export type BuildWatcherDeps = {
  kube: Kube
  db: Database
  logger: Logger
  finish: FinishBuild
  /** First wait before listing again after a failure; doubles up to 30 s. */
  retryMs?: number | undefined
}

export type BuildWatcher = {
  /** Resolves after the first list has been settled. */
  ready: Promise<void>
  close(): Promise<void>
}

export function startBuildWatcher(deps: BuildWatcherDeps): BuildWatcher {
  const { kube, logger } = deps
  let settled!: () => void
  const ready = new Promise<void>((resolve) => {
    settled = resolve
  })
  // One event at a time: a build's events are settled in the order they came.
  let queue = Promise.resolve()
  const enqueue = (job: V1Job, deleted: boolean): Promise<void> =>
    (queue = queue
      .then(() => settle(deps, job, deleted))
      .catch((error: unknown) => {
        logger.warn(
          { ...clusterFailure(error), err: error instanceof Error ? { message: error.message } : undefined },
          'could not settle a build from its Job',
        )
      }))

  async function listAndResync(): Promise<string> {
    // Read before the list: a build whose Job was recorded as created by then has it in the
    // list, unless it is gone. One whose Job is still being created (by this or any replica)
    // is not lost; the database says which, not this process's memory.
    const unfinished = await unfinishedBuilds(deps.db)
    const list = await kube.batch.listNamespacedJob({ namespace: kube.namespace, labelSelector: BUILD_SELECTOR })
    const seen = new Set<string>()
    for (const job of list.items) {
      const id = job.metadata?.labels?.[BUILD_LABEL]
      if (id !== undefined) seen.add(id)
      await enqueue(job, false)
    }
    // A build the database still follows whose Job is gone (deleted, or collected while the
    // control plane was down) will never end by itself.
    for (const build of unfinished) {
      if (seen.has(build.id) || !build.expectsJob) continue
      await deps.finish(build.id, { status: 'failed', error: 'the build Job is gone from the cluster', log: null })
    }
    return list.metadata?.resourceVersion ?? ''
  }

  const loop = watchLoop<V1Job>({
    kube,
    logger,
    path: `/apis/batch/v1/namespaces/${kube.namespace}/jobs`,
    labelSelector: BUILD_SELECTOR,
    async list() {
      const resourceVersion = await listAndResync()
      await queue
      settled()
      return resourceVersion
    },
    event: (type, job) => void enqueue(job, type === 'DELETED'),
    drained: () => queue,
    level: 'warn',
    watchFailed: 'build watch failed; listing again',
    listFailed: 'cannot list build Jobs; retrying',
    retryMs: deps.retryMs,
  })

  return {
    ready,
    async close() {
      settled()
      await loop.close()
      await queue
    },
  }
}

type JobState =
  { state: 'pending' } | { state: 'running' } | { state: 'succeeded' } | { state: 'failed'; reason: string }

function jobState(job: V1Job): JobState {
  const conditions = job.status?.conditions ?? []
  const holds = (type: string): boolean => conditions.some((c) => c.type === type && c.status === 'True')
  if (holds('Complete') || holds('SuccessCriteriaMet')) return { state: 'succeeded' }
  const failed = conditions.find((c) => c.type === 'Failed' && c.status === 'True')
  if (failed !== undefined)
    return {
      state: 'failed',
      reason: [failed.reason, failed.message].filter(Boolean).join(': ') || 'the build Job failed',
    }
  if ((job.status?.ready ?? 0) > 0) return { state: 'running' }
  return { state: 'pending' }
}

async function settle(deps: BuildWatcherDeps, job: V1Job, deleted: boolean): Promise<void> {
  const buildId = job.metadata?.labels?.[BUILD_LABEL]
  if (buildId === undefined) return
  // Every list repeats the finished Jobs still in their TTL: nothing to read or do for them.
  const current = await buildStatus(deps.db, buildId)
  if (current === null || current === 'succeeded' || current === 'failed') return
  const state = jobState(job)
  if (state.state === 'pending' && deleted) {
    await deps.finish(buildId, { status: 'failed', error: 'the build Job was deleted before it ended', log: null })
    return
  }
  if (state.state === 'pending') return
  if (state.state === 'running') {
    if (deleted)
      await deps.finish(buildId, { status: 'failed', error: 'the build Job was deleted before it ended', log: null })
    else if (await markRunning(deps.db, buildId)) deps.logger.info({ buildId }, 'build running')
    return
  }
  // The pod holds the log and the builder's last word (termination message); it may be gone.
  const [pod] = await listPods(deps.kube, `${BUILD_LABEL}=${buildId}`)
  const message =
    pod?.status?.containerStatuses?.find((c) => c.name === BUILD_CONTAINER)?.state?.terminated?.message?.trim() ?? ''
  let log: string | null = null
  if (pod !== undefined && containerState(pod) !== 'waiting') {
    log = await readPodLog(deps.kube, pod, MAX_STORED_LOG_BYTES).catch((error: unknown) => {
      deps.logger.warn({ buildId, ...clusterFailure(error) }, 'could not read the log of a finished build')
      return null
    })
  }
  if (state.state === 'succeeded') {
    const planned = job.spec?.template.spec?.containers[0]?.env?.find((e) => e.name === 'IMAGE_REF')?.value ?? ''
    await deps.finish(buildId, succeeded(message, planned, log))
  } else {
    await deps.finish(buildId, failed(message !== '' ? message : state.reason, log))
  }
}
