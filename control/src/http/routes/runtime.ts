import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { RouteDeps } from '../route-deps.js'
import { findApplication } from '../../store/applications.js'
import { latestImage } from '../../store/builds.js'
import { APP_NAME_LABEL, applySpinApp } from '../../cluster/spinapps.js'
import { ConflictError, NotFoundError, NotImplementedError } from '../../errors.js'
import { getFunction } from '../../store/functions.js'
import { applicationNotFound, functionNotFound } from '../../domain/not-found.js'
import { invoke, MAX_INVOKE_BODY_BYTES, prepareInvoke } from '../../domain/invoke.js'
import { clusterNotConfigured } from '../../cluster/kube.js'
import { sendLogStream } from '../log-stream.js'
import { containerState, listPods, openPodLog } from '../../cluster/pod-logs.js'
import { InvokeRequest, InvokeResult } from '../../model/resources.js'
import { Accepted, AppLogsQuery } from '../schemas/runtime.js'
import { AppParams, FunctionParams } from '../schemas/params.js'
import { errors } from '../schemas/errors.js'

// A 1 MiB body in base64 takes 4/3 of it, plus the envelope's JSON around it.
const INVOKE_JSON_LIMIT = Math.ceil(MAX_INVOKE_BODY_BYTES * 4 / 3) + 256 * 1024

export const runtimeRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, { db, config, cluster }) => {
  app.post('/applications/:appId/deploy', {
    schema: {
      tags: ['runtime'],
      summary: "Re-apply the deployment with the latest successful build's image",
      params: AppParams,
      response: { 202: Accepted, ...errors(404, 409, 501) },
    },
  }, async (request, reply) => {
    const application = await findApplication(db, request.params.appId)
    if (application === null) throw applicationNotFound()
    if (application.runtime !== 'wasmkube') throw new NotImplementedError(`deploy is not implemented for the ${application.runtime as string} runtime`)
    if (cluster === null) throw clusterNotConfigured()
    const image = await latestImage(db, application.id)
    if (image === null) throw new ConflictError('nothing to deploy: the application has no successful build yet')
    await applySpinApp(cluster.kube, config, application, image)
    request.log.info({ appId: application.id, image }, 'deployment applied')
    reply.code(202)
    return { message: `deploying ${image}` }
  })

  app.post('/applications/:appId/functions/:fnId/invoke', {
    bodyLimit: INVOKE_JSON_LIMIT,
    schema: {
      tags: ['runtime'],
      summary: 'Send one HTTP request to the deployed function; always 200, its status is in the result',
      params: FunctionParams,
      body: InvokeRequest,
      response: { 200: InvokeResult, ...errors(400, 404, 413, 415) },
    },
  }, async (request) => {
    const fn = await getFunction(db, request.params.appId, request.params.fnId)
    if (fn === null) throw functionNotFound()
    const prepared = prepareInvoke(request.body, fn.route)
    const application = await findApplication(db, request.params.appId)
    if (application === null) throw applicationNotFound()
    if (cluster === null) throw clusterNotConfigured()
    return invoke({ kube: cluster.kube, serviceName: application.name, timeoutMs: config.invokeTimeoutMs }, prepared)
  })

  app.get('/applications/:appId/logs', {
    schema: {
      tags: ['runtime'],
      summary: "The application pod's log; with follow=true the answer streams",
      description: 'The newest running pod of the application; Kubernetes keeps stdout and stderr in one log.',
      params: AppParams,
      querystring: AppLogsQuery,
      response: { 200: { content: { 'text/plain': { schema: Type.String() } } }, ...errors(400, 404) },
    },
  }, async (request, reply) => {
    const application = await findApplication(db, request.params.appId)
    if (application === null) throw applicationNotFound()
    if (cluster === null) throw clusterNotConfigured()
    const pods = await listPods(cluster.kube, `${APP_NAME_LABEL}=${application.name}`)
    const pod = pods.find((p) => containerState(p) === 'running') ?? pods.find((p) => containerState(p) === 'terminated')
    if (pod === undefined) throw new NotFoundError('no pod of this application has started')
    const abort = new AbortController()
    const upstream = await openPodLog(cluster.kube, pod, { follow: request.query.follow === true, tailLines: request.query.tail, signal: abort.signal })
    return sendLogStream(reply, upstream, abort)
  })
}
