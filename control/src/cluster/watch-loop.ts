// List, then watch from the list's resourceVersion, again and again: whenever the watch ends,
// for any reason, list again, so nothing missed while disconnected stays missed. A failure
// waits before the next list, doubling from `retryMs` to 30 s. What the build watcher and the
// SpinApps' watch share; each says what a list and an event mean.
import type { Logger } from '../logger.js'
import type { Kube } from './kube.js'
import { clusterFailure } from './kube.js'

export type WatchLoopDeps<T> = {
  kube: Kube
  logger: Logger
  /** The collection's path, e.g. /apis/batch/v1/namespaces/{ns}/jobs. */
  path: string
  labelSelector: string
  /** Lists and settles what it found; resolves with the resourceVersion to watch from. */
  list: () => Promise<string>
  /** ADDED, MODIFIED or DELETED (an ERROR ends the watch, and a list follows). */
  event: (type: string, object: T) => void
  /** Awaited after each watch ends, before its outcome is logged (events still being settled). */
  drained?: () => Promise<void>
  /** Each failure's log line: its level and what to say when the watch or the list fails. */
  level: 'warn' | 'debug'
  watchFailed: string
  listFailed: string
  retryMs?: number | undefined
}

export function watchLoop<T>(deps: WatchLoopDeps<T>): { close(): Promise<void> } {
  const { kube, logger } = deps
  let closed = false
  let abort: AbortController | null = null
  let wake: (() => void) | null = null

  /** Resolves when the watch ends: with the error that ended it, or null when the server closed it. */
  const watchFrom = (resourceVersion: string): Promise<unknown> =>
    new Promise((resolve) => {
      void kube.watch
        .watch(
          deps.path,
          { labelSelector: deps.labelSelector, resourceVersion, allowWatchBookmarks: true },
          (type: string, object: T) => {
            // ERROR (e.g. 410 Gone: too old a resourceVersion): list again.
            if (type === 'ERROR') abort?.abort()
            else if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') deps.event(type, object)
          },
          (error: unknown) => resolve(closed ? null : (error ?? null)),
        )
        .then(
          (controller) => {
            abort = controller
            if (closed) controller.abort()
          },
          (error: unknown) => resolve(error),
        )
    })

  const first = deps.retryMs ?? 1000
  let delay = first
  const pause = async (): Promise<void> => {
    await new Promise<void>((resolve) => {
      wake = resolve
      setTimeout(resolve, delay).unref()
    })
    delay = Math.min(delay * 2, 30_000)
  }
  const run = async (): Promise<void> => {
    while (!closed) {
      try {
        const error = await watchFrom(await deps.list())
        await deps.drained?.()
        if (error === null) {
          delay = first
        } else if (!closed) {
          logger[deps.level](clusterFailure(error), deps.watchFailed)
          await pause()
        }
      } catch (error) {
        logger[deps.level](clusterFailure(error), deps.listFailed)
        await pause()
      }
    }
  }
  const running = run()

  return {
    async close() {
      closed = true
      abort?.abort()
      wake?.()
      await running
    },
  }
}
