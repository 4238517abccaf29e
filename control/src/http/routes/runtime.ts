// The runtime: deploy, invoke a function, the application's log, in the cluster or on this machine.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { MAX_INVOKE_BODY_BYTES } from '../../domain/invoke.js'
import { invokeFunction, openApplicationLog, redeploy } from '../../domain/running.js'
import { InvokeRequest, InvokeResult } from '../../model/resources.js'
import { sendLogStream } from '../log-stream.js'
import type { RouteDeps } from '../route-deps.js'
import { errors } from '../schemas/errors.js'
import { AppParams, FunctionParams } from '../schemas/params.js'
import { Accepted, AppLogsQuery } from '../schemas/runtime.js'

// A 1 MiB body in base64 takes 4/3 of it, plus the envelope's JSON around it.
const INVOKE_JSON_LIMIT = Math.ceil((MAX_INVOKE_BODY_BYTES * 4) / 3) + 256 * 1024

export const runtimeRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, deps) => {
  app.post(
    '/applications/:appId/deploy',
    {
      schema: {
        tags: ['runtime'],
        operationId: 'deployApplication',
        summary: "Re-apply the deployment with the latest successful build's image",
        params: AppParams,
        response: { 202: Accepted, ...errors(404, 409) },
      },
    },
    async (request, reply) => {
      const { appId, image } = await redeploy(deps, request.params.appId)
      request.log.info({ appId, image }, 'deployment applied')
      reply.code(202)
      return { message: `deploying ${image}` }
    },
  )

  app.post(
    '/applications/:appId/functions/:fnId/invoke',
    {
      bodyLimit: INVOKE_JSON_LIMIT,
      schema: {
        tags: ['runtime'],
        operationId: 'invokeFunction',
        summary: 'Send one HTTP request to the deployed function; always 200, its status is in the result',
        params: FunctionParams,
        body: InvokeRequest,
        response: { 200: InvokeResult, ...errors(400, 404, 413, 415) },
      },
    },
    async (request) => invokeFunction(deps, request.params.appId, request.params.fnId, request.body),
  )

  app.get(
    '/applications/:appId/logs',
    {
      schema: {
        tags: ['runtime'],
        operationId: 'getApplicationLogs',
        summary: "The application pod's log; with follow=true the answer streams",
        description: 'The newest running pod of the application; Kubernetes keeps stdout and stderr in one log.',
        params: AppParams,
        querystring: AppLogsQuery,
        response: { 200: { content: { 'text/plain': { schema: Type.String() } } }, ...errors(400, 404) },
      },
    },
    async (request, reply) => {
      const abort = new AbortController()
      const upstream = await openApplicationLog(deps, request.params.appId, {
        follow: request.query.follow === true,
        tailLines: request.query.tail,
        signal: abort.signal,
      })
      return sendLogStream(reply, upstream, abort, deps.draining)
    },
  )
}
