// Applications: list, read (with the deployment), create, change settings, delete (with what runs in the cluster).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { tenantForNew, visibleTenants } from '../../domain/access.js'
import { applicationView, describeApplication, removeApplication } from '../../domain/applications.js'
import { configureApplication } from '../../domain/configure.js'
import { policyView } from '../../domain/policy.js'
import { ResourcePolicy } from '../../model/app-settings.js'
import { Application, ApplicationSummary } from '../../model/resources.js'
import { templateFiles } from '@session-relay/spin/templates'
import { createApplication, listApplications } from '../../store/applications.js'
import { callerOf } from '../auth.js'
import type { RouteDeps } from '../route-deps.js'
import { CreateApplication, PatchApplication } from '../schemas/applications.js'
import { errors } from '../schemas/errors.js'
import { AppParams } from '../schemas/params.js'

export const applicationRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, deps) => {
  const { db } = deps
  app.get(
    '/applications',
    {
      schema: {
        tags: ['applications'],
        operationId: 'listApplications',
        summary: "List the applications of the caller's tenants (an admin's: all), by name",
        response: { 200: Type.Array(ApplicationSummary) },
      },
    },
    async (request) => listApplications(db, visibleTenants(callerOf(request))),
  )

  app.get(
    '/applications/:appId',
    {
      schema: {
        tags: ['applications'],
        operationId: 'getApplication',
        summary: 'An application with its functions, deployment and builds',
        params: AppParams,
        response: { 200: Application, ...errors(404) },
      },
    },
    async (request) => describeApplication(deps, request.params.appId),
  )

  app.post(
    '/applications',
    {
      schema: {
        tags: ['applications'],
        operationId: 'createApplication',
        summary:
          'Create an application and its first function (same name, route "/...", the language\'s hello-world source) in the caller\'s tenant',
        description:
          'runtime defaults to wasmkube (the only one). tenant defaults to the caller\'s only tenant: 400 when the caller is in several and names none, 403 when the caller is not in the one named (admins may name any). A refusal names every field in error at once, separated by "; ".',
        body: CreateApplication,
        response: { 201: Application, ...errors(400, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      const { tenant, runtime, ...fields } = request.body
      // wasmkube is the only runtime: a caller need not name it.
      const created = await createApplication(
        db,
        { ...fields, runtime: runtime ?? 'wasmkube', tenant: tenantForNew(callerOf(request), tenant) },
        templateFiles,
      )
      reply.code(201)
      return applicationView(deps.config, created, null)
    },
  )

  app.patch(
    '/applications/:appId',
    {
      schema: {
        tags: ['applications'],
        operationId: 'updateApplication',
        summary:
          'Change the description, replicas, autoscaling, resources, concurrency or variables; fields given replace, fields absent stay',
        description:
          "A deployed application gets the change at once (its SpinApp re-applied, or its host restarted) and its deployment's message says so. " +
          "Resources are checked against the platform's policy (GET /policy): above a `max` is 400 naming the field; under `forced` the answer shows the platform's values. " +
          "Concurrency above the platform's (GET /policy: --local-max-concurrent-requests, --local-max-queued-requests) is 400 naming the field in every mode. " +
          'A secret variable\'s value is never shown again: answers say {"secret": true}, and sending that keeps the stored value.',
        params: AppParams,
        body: PatchApplication,
        response: { 200: Application, ...errors(400, 404, 413, 415) },
      },
    },
    async (request) => configureApplication(deps, request.params.appId, request.body),
  )

  app.get(
    '/policy',
    {
      schema: {
        tags: ['applications'],
        operationId: 'getResourcePolicy',
        summary:
          "The platform's resource policy: how its CPU and memory values bind every application's resources (null: no value)",
        response: { 200: ResourcePolicy },
      },
    },
    async () => policyView(deps.config),
  )

  app.delete(
    '/applications/:appId',
    {
      schema: {
        tags: ['applications'],
        operationId: 'deleteApplication',
        summary:
          'Delete an application with its functions, sources and builds, and its SpinApp, build Jobs and Secrets in the cluster',
        params: AppParams,
        response: { 204: Type.Null({ description: 'deleted' }), ...errors(404) },
      },
    },
    async (request, reply) => {
      await removeApplication(deps, request.params.appId)
      reply.code(204).send(null)
    },
  )
}
