// What a build, a tenant's pods or the control plane itself present to the token server: a
// credential (the password of Basic auth, as a Docker config.json carries it) that says what its
// holder may be granted. It is a JWT the control plane signs with the registry key, for an
// audience the registry never accepts, so it opens nothing by itself: every registry request
// still needs a token from GET /registry/token, which checks it again (a build's only while the
// build runs). Every credential expires: a tenant's within --registry-pull-credential-ttl, its
// Secret renewed before that (cluster/pull-secrets.ts).
import { jwtVerify, SignJWT } from 'jose'
import type { RegistrySigner } from './signing-key.js'
import { REGISTRY_TOKEN_ISSUER } from './signing-key.js'

/** The user name in config.json; only the password (the credential) counts. */
const CREDENTIAL_USER = 'wasmkube'

/**
 * A build: push and pull on its application's repository while the build runs. The control
 * plane: what one of its own pushes or reads needs, for minutes. A tenant: pull on that tenant's
 * repositories, for its SpinApps' pods.
 */
export type Grant =
  | { kind: 'build'; build: string; repository: string }
  | { kind: 'control'; repository: string; actions: Array<'pull' | 'push'> }
  | { kind: 'tenant'; tenant: string }

const audience = (signer: RegistrySigner): string => `${signer.service}#credential`

/** A credential for `grant`, issued at `now` (ms) and expiring `ttlMs` later: every credential expires. */
export async function mintCredential(
  signer: RegistrySigner,
  grant: Grant,
  ttlMs: number,
  now: number = Date.now(),
): Promise<string> {
  return new SignJWT({ grant })
    .setProtectedHeader({ alg: signer.alg })
    .setIssuer(REGISTRY_TOKEN_ISSUER)
    .setAudience(audience(signer))
    .setIssuedAt(Math.floor(now / 1000))
    .setExpirationTime(Math.floor((now + ttlMs) / 1000))
    .sign(signer.privateKey)
}

/**
 * The grant of a credential this control plane signed that has not expired at `now` (ms); null
 * otherwise, and for one without an expiry (tenant pull Secrets written before they had one).
 */
export async function verifyCredential(
  signer: RegistrySigner,
  credential: string,
  now: number = Date.now(),
): Promise<Grant | null> {
  try {
    const { payload } = await jwtVerify(credential, signer.publicKey, {
      issuer: REGISTRY_TOKEN_ISSUER,
      audience: audience(signer),
      algorithms: [signer.alg],
      requiredClaims: ['exp'],
      currentDate: new Date(now),
    })
    return isGrant(payload.grant) ? payload.grant : null
  } catch {
    return null
  }
}

function isGrant(value: unknown): value is Grant {
  if (typeof value !== 'object' || value === null) return false
  const grant = value as Record<string, unknown>
  switch (grant.kind) {
    case 'build':
      return typeof grant.build === 'string' && typeof grant.repository === 'string'
    case 'control':
      return (
        typeof grant.repository === 'string' &&
        Array.isArray(grant.actions) &&
        grant.actions.every((a) => a === 'pull' || a === 'push')
      )
    case 'tenant':
      return typeof grant.tenant === 'string'
    default:
      return false
  }
}

/** A Docker config.json that presents `credential` to each of `hosts`. */
export function dockerConfigJson(hosts: readonly string[], credential: string): string {
  const auth = Buffer.from(`${CREDENTIAL_USER}:${credential}`).toString('base64')
  return JSON.stringify({ auths: Object.fromEntries(hosts.map((host) => [host, { auth }])) })
}
