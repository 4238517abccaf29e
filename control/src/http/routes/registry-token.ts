// The registry's token endpoint (its auth.token.realm) when the control plane is the token
// server (--registry-token-key). Outside /api/v1 and its OIDC authentication: builders,
// containerd and the control plane's own registry client present a registry credential with
// Basic auth, as the distribution token protocol has them do.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { RegistryTokenDeps } from '../../domain/registry-token.js'
import { issueRegistryToken } from '../../domain/registry-token.js'
import { errors } from '../schemas/errors.js'

const Scope = Type.String({ maxLength: 512 })

const TokenQuery = Type.Object(
  {
    service: Type.Optional(Type.String({ maxLength: 256 })),
    scope: Type.Optional(Type.Union([Scope, Type.Array(Scope, { maxItems: 16 })])),
    account: Type.Optional(Type.String({ maxLength: 256 })),
    client_id: Type.Optional(Type.String({ maxLength: 256 })),
    offline_token: Type.Optional(Type.String({ maxLength: 16 })),
  },
  { additionalProperties: false },
)

const TokenAnswer = Type.Object(
  {
    token: Type.String({
      description: 'the registry token (JWT): its access names the repositories and actions granted, possibly none',
    }),
    access_token: Type.String({ description: 'the same token, under the OAuth 2 name some clients read' }),
    expires_in: Type.Integer({ description: 'seconds the token is valid' }),
    issued_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)

export const registryTokenRoutes: FastifyPluginAsyncTypebox<RegistryTokenDeps> = async (app, deps) => {
  app.get(
    '/registry/token',
    {
      schema: {
        operationId: 'getRegistryToken',
        tags: ['registry'],
        summary:
          "A token for the image registry, scoped to what the Basic credential's holder may reach now (a build: its application's repository while it runs; a tenant's pull Secret: that tenant's repositories)",
        security: [{ registryCredential: [] }],
        querystring: TokenQuery,
        response: { 200: TokenAnswer, ...errors(400, 401, 500) },
      },
    },
    async (request, reply) => {
      // A token is a credential: no cache between the registry's client and here may keep it.
      reply.header('cache-control', 'no-store')
      return issueRegistryToken(deps, request.headers.authorization, request.query)
    },
  )
}
