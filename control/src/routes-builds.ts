import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { RouteDeps } from './app.js'
import { getBuild, listBuilds } from './builds.js'
import { NotFoundError } from './errors.js'
import { applicationNotFound } from './functions.js'
import { applicationExists } from './applications.js'
import { AppParams, Build, BuildParams, errors, LogsQuery } from './schemas.js'
import { clusterUnavailable } from './unavailable.js'

export const buildRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, { db }) => {
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
      response: { 202: Build, ...errors(404) },
    },
  }, async (request) => {
    if (!await applicationExists(db, request.params.appId)) throw applicationNotFound()
    throw clusterUnavailable()
  })

  app.get('/applications/:appId/builds/:buildId/logs', {
    schema: {
      tags: ['builds', 'runtime'],
      summary: "A build's log; with follow=true the answer streams until the build pod exits",
      params: BuildParams,
      querystring: LogsQuery,
      response: { 200: { content: { 'text/plain': { schema: Type.String() } } }, ...errors(400, 404) },
    },
  }, async (request) => {
    if (await getBuild(db, request.params.appId, request.params.buildId) === null) throw buildNotFound()
    throw clusterUnavailable()
  })
}

function buildNotFound (): NotFoundError {
  return new NotFoundError('build not found')
}
