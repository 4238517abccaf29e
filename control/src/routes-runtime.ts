import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { RouteDeps } from './app.js'
import { applicationExists } from './applications.js'
import { applicationNotFound, getFunction } from './functions.js'
import { functionNotFound } from './routes-functions.js'
import { Accepted, AppLogsQuery, AppParams, errors, FunctionParams, InvokeRequest, InvokeResult } from './schemas.js'
import { clusterUnavailable } from './unavailable.js'

export const runtimeRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, { db }) => {
  app.post('/applications/:appId/deploy', {
    schema: {
      tags: ['runtime'],
      summary: "Re-apply the deployment with the latest successful build's image",
      params: AppParams,
      response: { 202: Accepted, ...errors(404) },
    },
  }, async (request) => {
    if (!await applicationExists(db, request.params.appId)) throw applicationNotFound()
    throw clusterUnavailable()
  })

  app.post('/applications/:appId/functions/:fnId/invoke', {
    schema: {
      tags: ['runtime'],
      summary: 'Send one HTTP request to the deployed function; always 200, its status is in the result',
      params: FunctionParams,
      body: InvokeRequest,
      response: { 200: InvokeResult, ...errors(400, 404, 413, 415) },
    },
  }, async (request) => {
    if (await getFunction(db, request.params.appId, request.params.fnId) === null) throw functionNotFound()
    throw clusterUnavailable()
  })

  app.get('/applications/:appId/logs', {
    schema: {
      tags: ['runtime'],
      summary: "The application pod's stderr; with follow=true the answer streams",
      params: AppParams,
      querystring: AppLogsQuery,
      response: { 200: { content: { 'text/plain': { schema: Type.String() } } }, ...errors(400, 404) },
    },
  }, async (request) => {
    if (!await applicationExists(db, request.params.appId)) throw applicationNotFound()
    throw clusterUnavailable()
  })
}
