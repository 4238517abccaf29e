import { randomUUID } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { RouteDeps } from '../route-deps.js'
import { findApplication } from '../../store/applications.js'
import { BUILD_LABEL, buildArchive, cannotBuild, createBuildJob, MAX_BUILD_ARCHIVE_BYTES } from '../../cluster/build-jobs.js'
import { createBuild, deleteBuild, getBuild, listBuilds, storedBuildLog } from '../../store/builds.js'
import { NotFoundError, TooLargeError } from '../../errors.js'
import { applicationNotFound, buildNotFound } from '../not-found.js'
import { clusterNotConfigured } from '../../cluster/kube.js'
import { sendLogStream, sendLogText } from '../log-stream.js'
import { containerState, listPods, openPodLog, readPodLog } from '../../cluster/pod-logs.js'
import { AppParams, Build, BuildParams, errors, LogsQuery } from '../../model/resources.js'
import { MAX_STORED_LOG_BYTES } from '../../cluster/build-watcher.js'

export const buildRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, { db, config, cluster }) => {
  app.get('/applications/:appId/builds', {
    schema: {
      tags: ['builds'],
      summary: 'Builds of an application, newest first',
      params: AppParams,
      response: { 200: Type.Array(Build), ...errors(404) },
    },
  }, async (request) => {
    const builds = await listBuilds(db, request.params.appId)
    if (builds === null) throw applicationNotFound()
    return builds
  })

  app.get('/applications/:appId/builds/:buildId', {
    schema: {
      tags: ['builds'],
      summary: 'A build; poll it until its status is succeeded or failed',
      params: BuildParams,
      response: { 200: Build, ...errors(404) },
    },
  }, async (request) => {
    const build = await getBuild(db, request.params.appId, request.params.buildId)
    if (build === null) throw buildNotFound()
    return build
  })

  app.post('/applications/:appId/builds', {
    schema: {
      tags: ['builds', 'runtime'],
      summary: 'Start a build of the current source; deployed automatically when it succeeds',
      params: AppParams,
      response: { 202: Build, ...errors(404, 413) },
    },
  }, async (request, reply) => {
    const application = await findApplication(db, request.params.appId)
    if (application === null) throw applicationNotFound()
    if (cluster === null) throw clusterNotConfigured()
    const refusal = cannotBuild(config, application.language)
    if (refusal !== null) throw refusal
    const archive = await buildArchive(db, application)
    if (archive.length > MAX_BUILD_ARCHIVE_BYTES) {
      throw new TooLargeError(`source too large to build: the gzipped sources take ${archive.length} bytes, at most ${MAX_BUILD_ARCHIVE_BYTES} fit in a Secret`)
    }
    // Marked before the row exists: a resync in between must not take it for a lost build.
    const id = randomUUID()
    cluster.watcher.starting.add(id)
    let build
    try {
      build = await createBuild(db, application.id, id)
      if (build === null) throw applicationNotFound()
      try {
        await createBuildJob(cluster.kube, config, application, id, archive)
      } catch (error) {
        // The caller gets the reason, not a build that can never run.
        await deleteBuild(db, id)
        throw error
      }
    } finally {
      cluster.watcher.starting.delete(id)
    }
    request.log.info({ buildId: build.id, appId: application.id }, 'build started')
    reply.code(202)
    return build
  })

  app.get('/applications/:appId/builds/:buildId/logs', {
    schema: {
      tags: ['builds', 'runtime'],
      summary: "A build's log; with follow=true the answer streams until the build pod exits",
      description: 'Waits until the build container runs. A finished build answers from the database, also after its Job is gone.',
      params: BuildParams,
      querystring: LogsQuery,
      response: { 200: { content: { 'text/plain': { schema: Type.String() } } }, ...errors(400, 404) },
    },
  }, async (request, reply) => {
    const { appId, buildId } = request.params
    let closed = false
    reply.raw.on('close', () => { closed = true })
    for (;;) {
      const build = await getBuild(db, appId, buildId)
      if (build === null) throw buildNotFound()
      const finished = build.status === 'succeeded' || build.status === 'failed'
      if (finished) {
        const stored = await storedBuildLog(db, buildId)
        if (stored !== undefined) return sendLogText(reply, stored)
      }
      if (cluster === null) throw finished ? logGone() : clusterNotConfigured()
      const [pod] = await listPods(cluster.kube, `${BUILD_LABEL}=${buildId}`)
      if (pod === undefined && finished) throw logGone()
      if (pod !== undefined && containerState(pod) === 'terminated') return sendLogText(reply, await readPodLog(cluster.kube, pod, MAX_STORED_LOG_BYTES))
      if (pod !== undefined && containerState(pod) === 'running') {
        const abort = new AbortController()
        const upstream = await openPodLog(cluster.kube, pod, { follow: request.query.follow === true, signal: abort.signal })
        return sendLogStream(reply, upstream, abort)
      }
      // Not started yet: look again until it runs, the build ends, or the caller leaves.
      await new Promise((resolve) => setTimeout(resolve, cluster.pollMs))
      if (closed) return sendLogText(reply, '') // to nobody: the caller has gone
    }
  })
}

function logGone (): NotFoundError {
  return new NotFoundError("the build's log is gone: its pod was removed before the log could be saved")
}
