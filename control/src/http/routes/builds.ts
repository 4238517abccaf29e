// Builds of an application: list, read, start, and the build's log. Each route's schema and
// handler are named, so the plugin at the bottom reads as the list of routes it is.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'
import { findBuildLog, startBuild } from '../../domain/builds.js'
import { applicationNotFound, buildNotFound } from '../../domain/not-found.js'
import { Build } from '../../model/resources.js'
import { findApplication } from '../../store/applications.js'
import { getBuild, listBuilds } from '../../store/builds.js'
import { sendLogStream, sendLogText } from '../log-stream.js'
import type { RouteDeps } from '../route-deps.js'
import { errors } from '../schemas/errors.js'
import { AppParams, BuildParams } from '../schemas/params.js'
import { LogsQuery } from '../schemas/runtime.js'

const listSchema = {
  operationId: 'listBuilds',
  tags: ['builds'],
  summary: 'Builds of an application, newest first',
  params: AppParams,
  response: { 200: Type.Array(Build), ...errors(404) },
}

const getSchema = {
  operationId: 'getBuild',
  tags: ['builds'],
  summary: 'A build; poll it until its status is succeeded or failed',
  params: BuildParams,
  response: { 200: Build, ...errors(404) },
}

const startSchema = {
  operationId: 'startBuild',
  tags: ['builds', 'runtime'],
  summary: 'Start a build of the current source; deployed automatically when it succeeds',
  params: AppParams,
  response: { 202: Build, ...errors(404, 413, 429) },
}

const logSchema = {
  operationId: 'getBuildLog',
  tags: ['builds', 'runtime'],
  summary: "A build's log; with follow=true the answer streams until the build pod exits",
  description:
    'Waits until the build container runs. A finished build answers from the database, also after its Job is gone.',
  params: BuildParams,
  querystring: LogsQuery,
  response: { 200: { content: { 'text/plain': { schema: Type.String() } } }, ...errors(400, 404) },
}

export const buildRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, deps) => {
  const { db } = deps

  app.get('/applications/:appId/builds', { schema: listSchema }, async (request) => {
    const builds = await listBuilds(db, request.params.appId)
    if (builds === null) throw applicationNotFound()
    return builds
  })

  app.get('/applications/:appId/builds/:buildId', { schema: getSchema }, async (request) => {
    const build = await getBuild(db, request.params.appId, request.params.buildId)
    if (build === null) throw buildNotFound()
    return build
  })

  app.post('/applications/:appId/builds', { schema: startSchema }, async (request, reply) => {
    const application = await findApplication(db, request.params.appId)
    if (application === null) throw applicationNotFound()
    const build = await startBuild(deps, application)
    request.log.info({ buildId: build.id, appId: application.id }, 'build started')
    reply.code(202)
    return build
  })

  app.get('/applications/:appId/builds/:buildId/logs', { schema: logSchema }, async (request, reply) =>
    sendBuildLog(deps, request.params, request.query.follow === true, reply),
  )
}

/** The log as it is now, or streamed while the pod runs; a build whose pod has not started yet is looked at again until it does. */
async function sendBuildLog(
  deps: RouteDeps,
  { appId, buildId }: { appId: string; buildId: string },
  follow: boolean,
  reply: FastifyReply,
): Promise<FastifyReply> {
  let closed = false
  reply.raw.on('close', () => {
    closed = true
  })
  for (;;) {
    const abort = new AbortController()
    const log = await findBuildLog(deps, appId, buildId, { follow, signal: abort.signal })
    if (log.kind === 'text') return sendLogText(reply, log.text)
    if (log.kind === 'stream') return sendLogStream(reply, log.upstream, abort, deps.draining)
    // Not started yet: look again until it runs, the build ends, or the caller leaves.
    await new Promise((resolve) => setTimeout(resolve, deps.runtime.logPollMs))
    if (closed) return sendLogText(reply, '') // to nobody: the caller has gone
    if (deps.draining.draining) return sendLogText(reply, '') // the process stops: ask another replica
  }
}
