// Who the caller is, as the API sees them: the console asks once after sign-in so it offers
// only what the caller may do (a read-only caller gets no write controls). The API still
// decides every request itself (domain/access.ts); this only tells the same answer ahead.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { Caller } from '../../domain/access.js'
import { callerOf } from '../auth.js'
import type { RouteDeps } from '../route-deps.js'

const Me = Type.Object(
  {
    subject: Type.Union([Type.String(), Type.Null()], {
      description: "the token's sub; null when authentication is off",
    }),
    role: Type.Union([Type.Literal('admin'), Type.Literal('member'), Type.Literal('read-only')], {
      description:
        'admin: reads and changes every tenant (--admin-claim); member: reads and changes their tenants; read-only: reads their tenants, every write answers 403 (--readonly-claim)',
    }),
    tenants: Type.Array(Type.String(), {
      description: "the tenants the caller belongs to (from --tenant-claim; ['default'] without one)",
    }),
    allTenants: Type.Boolean({ description: 'true for an admin: every tenant is visible, not only those listed' }),
  },
  { additionalProperties: false },
)

const roleOf = (caller: Caller): 'admin' | 'member' | 'read-only' =>
  caller.admin ? 'admin' : caller.readOnly ? 'read-only' : 'member'

export const meRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app) => {
  app.get(
    '/me',
    {
      schema: {
        tags: ['caller'],
        operationId: 'getMe',
        summary: 'Who the caller is: subject, role (admin, member, read-only) and tenants',
        response: { 200: Me },
      },
    },
    async (request) => {
      const caller = callerOf(request)
      return {
        subject: caller.subject ?? null,
        role: roleOf(caller),
        tenants: caller.tenants,
        allTenants: caller.admin,
      }
    },
  )
}
