// Who may read and change what: the one place every route's authorisation comes from. A caller
// belongs to tenants (from the token's tenant claim, or `default`), may be an admin (every
// tenant) or read-only (no writes). The routes never decide this themselves: the API runs
// `authorize` before each of them (http/app.ts), and the lists ask `visibleTenants`.
import { ForbiddenError, InvalidInputError } from '@session-relay/common/errors'
import { applicationTenant } from '../store/applications.js'
import type { Database } from '../store/db.js'

export type Caller = {
  /** The tenants the caller belongs to; for an admin possibly none. */
  tenants: string[]
  admin: boolean
  /** Never true together with admin: an admin may write. */
  readOnly: boolean
  /** The token's `sub`, to say who is signed in (GET /me); absent without authentication. */
  subject?: string | undefined
}

/** Everyone when tenants are off (no tenant claim) or authentication is. */
const DEFAULT_TENANT = 'default'

export const everyoneCaller: Caller = { tenants: [DEFAULT_TENANT], admin: false, readOnly: false }

/** The tenants whose applications the caller sees; null: all of them. */
export function visibleTenants(caller: Caller): string[] | null {
  return caller.admin ? null : caller.tenants
}

function sees(caller: Caller, tenant: string): boolean {
  return caller.admin || caller.tenants.includes(tenant)
}

/**
 * Refuses a request the caller may not make: a write by a read-only caller, anything under an
 * application of a tenant the caller is not in. An id that exists nowhere passes, so the route
 * answers its own 404: whether an id exists says nothing about other tenants. Resolves with the
 * application's tenant (null for none), which the request counts towards.
 */
export async function authorize(
  db: Database,
  caller: Caller,
  request: { write: boolean; appId: string | undefined },
): Promise<{ tenant: string | null }> {
  let tenant: string | null = null
  if (request.appId !== undefined) {
    tenant = await applicationTenant(db, request.appId)
    if (tenant === null) return { tenant }
    if (!sees(caller, tenant)) throw new ForbiddenError('this application belongs to a tenant you are not in')
  }
  if (request.write && caller.readOnly)
    throw new ForbiddenError('read-only access: this request would change something (or run code)')
  return { tenant }
}

/** The tenant a new application goes to: the one asked for, else the caller's only one. */
export function tenantForNew(caller: Caller, requested: string | undefined): string {
  if (requested !== undefined) {
    if (!sees(caller, requested)) throw new ForbiddenError(`you are not in the tenant ${requested}`)
    return requested
  }
  const [only, ...more] = caller.tenants
  if (only !== undefined && more.length === 0) return only
  if (only === undefined) throw new InvalidInputError('tenant: name the tenant to create the application in')
  throw new InvalidInputError(`tenant: you are in several tenants, name one of ${caller.tenants.join(', ')}`)
}
