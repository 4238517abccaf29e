import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { templateFiles } from '@session-relay/spin/templates'
import { applicationNotFound, functionNotFound } from '../../domain/not-found.js'
import { FunctionSchema } from '../../model/resources.js'
import {
  createFunction,
  defaultRoute,
  deleteFunction,
  getFunction,
  listFunctions,
  updateRoute,
} from '../../store/functions.js'
import type { RouteDeps } from '../route-deps.js'
import { errors } from '../schemas/errors.js'
import { CreateFunction, UpdateFunction } from '../schemas/functions.js'
import { AppParams, FunctionParams } from '../schemas/params.js'

export const functionRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, { db }) => {
  app.get(
    '/applications/:appId/functions',
    {
      schema: {
        tags: ['functions'],
        operationId: 'listFunctions',
        summary: 'List the functions of an application, by name',
        params: AppParams,
        response: { 200: Type.Array(FunctionSchema), ...errors(404) },
      },
    },
    async (request) => {
      const functions = await listFunctions(db, request.params.appId)
      if (functions === null) throw applicationNotFound()
      return functions
    },
  )

  app.get(
    '/applications/:appId/functions/:fnId',
    {
      schema: {
        tags: ['functions'],
        operationId: 'getFunction',
        summary: 'A function',
        params: FunctionParams,
        response: { 200: FunctionSchema, ...errors(404) },
      },
    },
    async (request) => {
      const fn = await getFunction(db, request.params.appId, request.params.fnId)
      if (fn === null) throw functionNotFound()
      return fn
    },
  )

  app.post(
    '/applications/:appId/functions',
    {
      schema: {
        tags: ['functions'],
        operationId: 'createFunction',
        summary: 'Add a function with the language\'s hello-world source; its route defaults to "/{name}/..."',
        params: AppParams,
        body: CreateFunction,
        response: { 201: FunctionSchema, ...errors(400, 404, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      const { name, route } = request.body
      const fn = await createFunction(
        db,
        request.params.appId,
        { name, route: route ?? defaultRoute(name) },
        templateFiles,
      )
      if (fn === null) throw applicationNotFound()
      reply.code(201)
      return fn
    },
  )

  app.put(
    '/applications/:appId/functions/:fnId',
    {
      schema: {
        tags: ['functions'],
        operationId: 'updateFunction',
        summary: "Change a function's route",
        params: FunctionParams,
        body: UpdateFunction,
        response: { 200: FunctionSchema, ...errors(400, 404, 409, 413, 415) },
      },
    },
    async (request) => {
      const fn = await updateRoute(db, request.params.appId, request.params.fnId, request.body.route)
      if (fn === null) throw functionNotFound()
      return fn
    },
  )

  app.delete(
    '/applications/:appId/functions/:fnId',
    {
      schema: {
        tags: ['functions'],
        operationId: 'deleteFunction',
        summary: 'Delete a function and its source',
        params: FunctionParams,
        response: { 204: Type.Null({ description: 'deleted' }), ...errors(404) },
      },
    },
    async (request, reply) => {
      if (!(await deleteFunction(db, request.params.appId, request.params.fnId))) throw functionNotFound()
      reply.code(204).send(null)
    },
  )
}
