// What follows a build's end, whichever runtime ran it (the cluster's build watcher, or a builder
// process on this machine): the outcome recorded once, the reconcile told that what should run
// changed, the image's size read in the background, and whoever counts builds told.
import type { Logger } from '../logger.js'
import type { BuildT } from '../model/resources.js'
import type { FinishBuild } from '../runtime/runtime.js'
import { finishBuild, recordImageSize } from '../store/builds.js'
import type { Database } from '../store/db.js'
import type { DesiredChanges } from './desired-changes.js'

export type BuildFinisherDeps = {
  db: Database
  logger: Logger
  /** Told that the application's newest successful build changed (the reconcile follows it). */
  changes: DesiredChanges
  /** The size of a built image (config plus layers), null when it cannot be read. */
  measureImage: (imageRef: string) => Promise<number | null>
  /** Told once per build that ends, with its application's tenant (metrics). */
  onFinished: (build: BuildT, tenant: string) => void
}

export type BuildFinisher = {
  finish: FinishBuild
  /** Resolves when the image sizes being read have been read (close waits for them). */
  settled(): Promise<void>
}

export function buildFinisher(deps: BuildFinisherDeps): BuildFinisher {
  const { db, logger } = deps
  const measuring = new Set<Promise<void>>()

  // A registry that is slow or refuses leaves the size unknown, never the build unfinished.
  const measure = (build: BuildT, imageRef: string): void => {
    const done: Promise<void> = deps
      .measureImage(imageRef)
      .then(async (bytes) => {
        if (bytes !== null) await recordImageSize(db, build.id, bytes)
      })
      .catch((error: unknown) => {
        logger.debug(
          { buildId: build.id, reason: (error as Error).message },
          'image size unknown: its manifest could not be read',
        )
      })
      .finally(() => measuring.delete(done))
    measuring.add(done)
  }

  return {
    async finish(buildId, outcome) {
      // Null when it had already ended (another event, another replica): that one did the rest.
      const build = await finishBuild(db, buildId, outcome)
      if (build === null) return
      const { appId, tenant, ...result } = build
      logger.info(
        { buildId, appId, status: result.status, imageRef: result.imageRef, error: result.error },
        'build finished',
      )
      if (result.status === 'succeeded' && result.imageRef !== null) {
        // The reconcile applies it, or keeps why not and retries; a throw here is its bug alone.
        await deps.changes.changed(appId).catch((error: unknown) => {
          logger.error({ buildId, appId, err: error }, 'reconcile after the build failed')
        })
        measure(result, result.imageRef)
      }
      try {
        deps.onFinished(result, tenant)
      } catch (error) {
        logger.error({ err: error }, 'onBuildFinished failed')
      }
    },
    async settled() {
      await Promise.all([...measuring])
    },
  }
}
