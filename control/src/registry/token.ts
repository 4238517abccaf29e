// The distribution registry's token authentication, server side: what a request's scopes ask,
// what the holder's grant allows of them, and the signed token the registry checks
// (https://distribution.github.io/distribution/spec/auth/token/ and .../jwt/). A scope asking
// more than the grant allows is answered with less, as the specification says: the registry
// then refuses what is missing with its own 401 or 403.
import { randomUUID } from 'node:crypto'
import { SignJWT } from 'jose'
import type { Grant } from './credentials.js'
import type { RegistrySigner } from './signing-key.js'
import { REGISTRY_TOKEN_ISSUER } from './signing-key.js'

/** Long enough for one push of a big layer's upload to start; the client asks again after. */
export const TOKEN_TTL_SECONDS = 300

type Action = 'pull' | 'push'
export type Access = { type: 'repository'; name: string; actions: Action[] }

/** What the grant needs to know of the present state: a build's, a repository's owner. */
export type GrantLookup = {
  /** Whether the build is still pending or running: a finished build's credential opens nothing. */
  buildActive(buildId: string): Promise<boolean>
  /** The tenant whose application the repository holds, or null. */
  tenantOfRepository(name: string): Promise<string | null>
}

// `repository:name:actions`; a name may hold a colon (a registry host with a port), the type and
// the actions may not. Other types (registry:catalog:*) are never granted.
const SCOPE = /^repository:([^\s]+):([a-z*,]+)$/

/** The repository scopes of a request, actions outside pull and push dropped. */
export function parseScopes(scopes: readonly string[]): Access[] {
  const access: Access[] = []
  for (const scope of scopes.flatMap((text) => text.split(' '))) {
    const match = SCOPE.exec(scope)
    if (match === null) continue
    const actions = [...new Set(match[2]!.split(','))].filter((a): a is Action => a === 'pull' || a === 'push')
    if (actions.length > 0) access.push({ type: 'repository', name: match[1]!, actions })
  }
  return access
}

/** Of what is asked, what `grant` allows now. */
export async function grantedAccess(grant: Grant, asked: readonly Access[], lookup: GrantLookup): Promise<Access[]> {
  const granted: Access[] = []
  for (const access of asked) {
    const allowed = await allowedActions(grant, access.name, lookup)
    const actions = access.actions.filter((action) => allowed.includes(action))
    if (actions.length > 0) granted.push({ ...access, actions })
  }
  return granted
}

async function allowedActions(grant: Grant, name: string, lookup: GrantLookup): Promise<Action[]> {
  switch (grant.kind) {
    case 'build':
      return name === grant.repository && (await lookup.buildActive(grant.build)) ? ['pull', 'push'] : []
    case 'control':
      return name === grant.repository ? grant.actions : []
    case 'tenant':
      return (await lookup.tenantOfRepository(name)) === grant.tenant ? ['pull'] : []
  }
}

/** The token the registry accepts: its service as audience, the access granted, minutes of life. */
export async function signRegistryToken(
  signer: RegistrySigner,
  subject: string,
  access: readonly Access[],
): Promise<string> {
  return (
    new SignJWT({ access })
      .setProtectedHeader({ alg: signer.alg, x5c: signer.x5c })
      .setIssuer(REGISTRY_TOKEN_ISSUER)
      .setAudience(signer.service)
      .setSubject(subject)
      .setIssuedAt()
      // A node's clock a little behind the control plane's must not refuse a fresh token.
      .setNotBefore('-1m')
      .setExpirationTime(`${TOKEN_TTL_SECONDS}s`)
      .setJti(randomUUID())
      .sign(signer.privateKey)
  )
}

/** Who the token is for, as the registry logs it; never the credential. */
export function subjectOf(grant: Grant): string {
  switch (grant.kind) {
    case 'build':
      return `build:${grant.build}`
    case 'control':
      return 'control-plane'
    case 'tenant':
      return `tenant:${grant.tenant}`
  }
}
