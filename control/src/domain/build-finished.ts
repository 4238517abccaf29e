// What follows a build's end, whichever runtime ran it (the cluster's build watcher, or a builder
// process on this machine): the outcome recorded once, the application deployed with the new
// image (or why not remembered for its deployment's message), the image's size read in the
// background, and whoever counts builds told.
import { HttpError } from '@session-relay/common/errors'
import type { Logger } from '../logger.js'
import type { BuildT } from '../model/resources.js'
import type { FinishBuild, Runtime } from '../runtime/runtime.js'
import { findApplication } from '../store/applications.js'
import { finishBuild, recordImageSize } from '../store/builds.js'
import type { DomainDeps } from './deps.js'
import { deployApplication } from './deploy.js'

export type BuildFinisherDeps = Omit<DomainDeps, 'runtime'> & {
  logger: Logger
  /** The runtime the process runs, once it is started (it is given `finish` before that). */
  runtime: () => Runtime
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

  const deploy = async (appId: string, buildId: string, image: string): Promise<void> => {
    const application = await findApplication(db, appId)
    if (application === null) return
    try {
      await deployApplication({ ...deps, runtime: deps.runtime() }, application, image)
    } catch (error) {
      if (error instanceof HttpError) deps.notApplied.set(appId, error.message)
      logger.warn(
        { buildId, appId, reason: (error as Error).message },
        'build succeeded but its deployment could not be applied',
      )
    }
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
        await deploy(appId, buildId, result.imageRef)
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
