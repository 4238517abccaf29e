// GET /registry/token's work: the caller's Basic credential checked, its scopes cut to what its
// grant allows now, a registry token signed for them. The registry trusts only tokens this
// signs, so a build, a tenant's pods and the control plane each reach only their repositories.
import { InvalidInputError, UnauthorizedError } from '@session-relay/common/errors'
import type { RegistrySettings } from '../registry/settings.js'
import { verifyCredential } from '../registry/credentials.js'
import { clusterNameOf } from '../registry/repositories.js'
import type { RegistrySigner } from '../registry/signing-key.js'
import type { GrantLookup } from '../registry/token.js'
import { grantedAccess, parseScopes, signRegistryToken, subjectOf, TOKEN_TTL_SECONDS } from '../registry/token.js'
import { tenantOfClusterName } from '../store/applications.js'
import { buildStatus } from '../store/builds.js'
import type { Database } from '../store/db.js'

export type RegistryTokenDeps = {
  db: Database
  config: RegistrySettings
  signer: RegistrySigner
  /** The clock a credential's expiry is checked by (ms). */
  now: () => number
}

export type RegistryTokenAnswer = { token: string; access_token: string; expires_in: number; issued_at: string }

const CHALLENGE = { 'www-authenticate': 'Basic realm="registry token", charset="UTF-8"' }

/** The password of a Basic authorization header, or null. */
function basicPassword(authorization: string | undefined): string | null {
  const match = /^Basic ([A-Za-z0-9+/=]{1,8192})$/.exec(authorization ?? '')
  if (match === null) return null
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  return colon === -1 ? null : decoded.slice(colon + 1)
}

function lookupIn(db: Database, config: RegistrySettings): GrantLookup {
  return {
    async buildActive(buildId) {
      const status = await buildStatus(db, buildId)
      return status === 'pending' || status === 'running'
    },
    async tenantOfRepository(name) {
      const clusterName = clusterNameOf(config, name)
      return clusterName === null ? null : tenantOfClusterName(db, clusterName)
    },
  }
}

export async function issueRegistryToken(
  deps: RegistryTokenDeps,
  authorization: string | undefined,
  query: { service?: string; scope?: string | string[] },
): Promise<RegistryTokenAnswer> {
  const credential = basicPassword(authorization)
  const grant = credential === null ? null : await verifyCredential(deps.signer, credential, deps.now())
  if (grant === null)
    throw new UnauthorizedError(
      'a registry credential of this control plane is required (Basic auth, as a build or a pull Secret presents it)',
      CHALLENGE,
    )
  if (query.service !== undefined && query.service !== deps.signer.service) {
    throw new InvalidInputError(`service: this token server signs for ${deps.signer.service}, not ${query.service}`)
  }
  const asked = parseScopes(query.scope === undefined ? [] : [query.scope].flat())
  const access = await grantedAccess(grant, asked, lookupIn(deps.db, deps.config))
  const token = await signRegistryToken(deps.signer, subjectOf(grant), access)
  return { token, access_token: token, expires_in: TOKEN_TTL_SECONDS, issued_at: new Date().toISOString() }
}
