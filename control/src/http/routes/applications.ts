import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { RouteDeps } from '../route-deps.js'
import { createApplication, deleteApplication, findApplication, getApplication, listApplications } from '../../store/applications.js'
import { APPLICATION_LABEL, deleteBuildResources } from '../../cluster/build-jobs.js'
import { hasBuilds, latestImage } from '../../store/builds.js'
import { deleteSpinApp, readDeployment } from '../../cluster/spinapps.js'
import { applicationNotFound } from '../../domain/not-found.js'
import { Application, ApplicationSummary } from '../../model/resources.js'
import { AppParams } from '../schemas/params.js'
import { CreateApplication } from '../schemas/applications.js'
import { errors } from '../schemas/errors.js'

export const applicationRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, { db, config, cluster }) => {
  app.get('/applications', {
    schema: {
      tags: ['applications'],
      summary: 'List applications, by name',
      response: { 200: Type.Array(ApplicationSummary) },
    },
  }, async () => listApplications(db))

  app.get('/applications/:appId', {
    schema: {
      tags: ['applications'],
      summary: 'An application with its functions, deployment and builds',
      params: AppParams,
      response: { 200: Application, ...errors(404) },
    },
  }, async (request) => {
    const application = await getApplication(db, request.params.appId)
    if (application === null) throw applicationNotFound()
    // Nothing can be deployed without a cluster, so there is no deployment to show.
    const image = cluster === null ? null : await latestImage(db, application.id)
    if (cluster === null || image === null) return application
    return { ...application, deployment: await readDeployment(cluster.kube, config, application, image) }
  })

  app.post('/applications', {
    schema: {
      tags: ['applications'],
      summary: 'Create an application and its first function (same name, route "/...")',
      body: CreateApplication,
      response: { 201: Application, ...errors(400, 409, 413, 415) },
    },
  }, async (request, reply) => {
    reply.code(201)
    return createApplication(db, request.body)
  })

  app.delete('/applications/:appId', {
    schema: {
      tags: ['applications'],
      summary: 'Delete an application with its functions, sources and builds, and its SpinApp, build Jobs and Secrets in the cluster',
      params: AppParams,
      response: { 204: Type.Null({ description: 'deleted' }), ...errors(404) },
    },
  }, async (request, reply) => {
    const application = await findApplication(db, request.params.appId)
    if (application === null) throw applicationNotFound()
    // The cluster first: if it refuses, the application stays and the caller can try again,
    // rather than leaving a running deployment nobody can reach through this API.
    if (cluster !== null && await hasBuilds(db, application.id)) {
      await deleteSpinApp(cluster.kube, application.name)
      await deleteBuildResources(cluster.kube, `${APPLICATION_LABEL}=${application.id}`)
    }
    if (!await deleteApplication(db, application.id)) throw applicationNotFound()
    reply.code(204).send(null)
  })
}
