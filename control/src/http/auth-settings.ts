// Who may call the API: the OpenID provider and its keys, the claims that admit, place and
// limit a caller, authentication turned off for development, and the web console's sign-in.
// Read by http/auth.ts (through server.ts) and http/console.ts.
import {
  anyText,
  ConfigError,
  parseBoolean,
  parseHttpUrl,
  parseTimerDuration,
} from '@session-relay/common/config/settings'
import { formatDuration } from '@session-relay/common/config/duration'
import { rowOf } from '../setting-parsers.js'

/** A claim the token must carry: `value` equals the claim, or is one element of it when it is an array. */
export type RequiredClaim = { name: string; value: string }

export type AuthSettings = {
  oidcIssuer: string
  oidcAudience: string // empty disables the audience check
  jwksMinRefreshMs: number // the provider's signing keys are refetched no sooner than this...
  jwksMaxRefreshMs: number // ...and no later than this, whatever their Cache-Control says
  devInsecureSkipAuth: boolean
  devInsecureListenAnywhere: boolean
  requiredClaim: RequiredClaim | null
  tenantClaim: string // empty: every caller is in the tenant `default`
  adminClaim: RequiredClaim | null // callers carrying it see and change every tenant
  readonlyClaim: RequiredClaim | null // callers carrying it (and not admin) may only read
  consoleClientId: string // public OAuth client the web console signs in with; empty: no sign-in offered
  consoleScopes: string
  consoleDir: string // the built console; empty: dist/console beside the code
}

const setting = rowOf<AuthSettings>()

function parseRequiredClaim(text: string): RequiredClaim | null {
  if (text === '') return null
  const equals = text.indexOf('=')
  const name = text.slice(0, equals).trim()
  const value = text.slice(equals + 1).trim()
  if (equals === -1 || name === '' || value === '') throw new Error('expected claim=value, e.g. groups=platform-admins')
  return { name, value }
}

function parseClaimName(text: string): string {
  const name = text.trim()
  if (/[\s=]/.test(name)) throw new Error('expected the name of a claim, e.g. groups, tenant or sub')
  return name
}

function parseScopes(text: string): string {
  const scopes = text.trim().split(/\s+/)
  if (!scopes.includes('openid'))
    throw new Error('expected space-separated scopes including openid, e.g. "openid offline_access"')
  return scopes.join(' ')
}

export const authSettings = [
  setting({
    key: 'oidcIssuer',
    env: 'PLATFORM_OIDC_ISSUER',
    flag: '--oidc-issuer',
    default: '',
    parse: parseHttpUrl,
    help: 'issuer of the id tokens, as in their iss; required unless auth is skipped',
  }),
  setting({
    key: 'oidcAudience',
    env: 'PLATFORM_OIDC_AUDIENCE',
    flag: '--oidc-audience',
    default: '',
    parse: anyText,
    help: 'expected aud (the OAuth client id); empty accepts any, with a warning',
  }),
  setting({
    key: 'jwksMinRefreshMs',
    env: 'PLATFORM_JWKS_MIN_REFRESH',
    flag: '--jwks-min-refresh',
    default: '1m',
    parse: parseTimerDuration,
    help: "floor of the JWKS's Cache-Control max-age: keys refetched no more often",
  }),
  setting({
    key: 'jwksMaxRefreshMs',
    env: 'PLATFORM_JWKS_MAX_REFRESH',
    flag: '--jwks-max-refresh',
    default: '1h',
    parse: parseTimerDuration,
    help: 'ceiling of that max-age: the longest a withdrawn key stays trusted',
  }),
  setting({
    key: 'devInsecureSkipAuth',
    env: 'PLATFORM_DEV_INSECURE_SKIP_AUTH',
    flag: '--dev-insecure-skip-auth',
    default: 'false',
    parse: parseBoolean,
    help: 'development only: no authentication at all, loopback only',
  }),
  setting({
    key: 'devInsecureListenAnywhere',
    env: 'PLATFORM_DEV_INSECURE_LISTEN_ANYWHERE',
    flag: '--dev-insecure-listen-anywhere',
    default: 'false',
    parse: parseBoolean,
    help: 'with --dev-insecure-skip-auth, allow a non-loopback --addr',
  }),
  setting({
    key: 'requiredClaim',
    env: 'PLATFORM_REQUIRED_CLAIM',
    flag: '--required-claim',
    default: '',
    parse: parseRequiredClaim,
    help: 'claim=value every token must carry, e.g. groups=platform-admins or roles=admin; else 403',
  }),
  setting({
    key: 'tenantClaim',
    env: 'PLATFORM_TENANT_CLAIM',
    flag: '--tenant-claim',
    default: '',
    parse: parseClaimName,
    help: "claim naming the caller's tenants; empty: everyone in tenant default",
  }),
  setting({
    key: 'adminClaim',
    env: 'PLATFORM_ADMIN_CLAIM',
    flag: '--admin-claim',
    default: '',
    parse: parseRequiredClaim,
    help: 'claim=value of admins, who act in every tenant; empty: no admins',
  }),
  setting({
    key: 'readonlyClaim',
    env: 'PLATFORM_READONLY_CLAIM',
    flag: '--readonly-claim',
    default: '',
    parse: parseRequiredClaim,
    help: 'claim=value of read-only callers (403 on every write); empty: none',
  }),
  setting({
    key: 'consoleClientId',
    env: 'PLATFORM_CONSOLE_CLIENT_ID',
    flag: '--console-client-id',
    default: '',
    parse: anyText,
    help: 'public OAuth client id the web console signs in with; empty: no sign-in',
  }),
  setting({
    key: 'consoleScopes',
    env: 'PLATFORM_CONSOLE_SCOPES',
    flag: '--console-scopes',
    default: 'openid offline_access',
    parse: parseScopes,
    help: 'scopes the console asks for, space-separated; openid required',
  }),
  setting({
    key: 'consoleDir',
    env: 'PLATFORM_CONSOLE_DIR',
    flag: '--console-dir',
    default: '',
    parse: anyText,
    help: 'directory of the built web console, served at /; empty: dist/console',
  }),
]

/** What no one row can check: an issuer unless authentication is off, and the refresh bounds in order. */
export function checkAuthSettings(config: AuthSettings): void {
  if (!config.devInsecureSkipAuth && config.oidcIssuer === '') {
    throw new ConfigError('--oidc-issuer (PLATFORM_OIDC_ISSUER) is required unless --dev-insecure-skip-auth is set')
  }
  if (config.jwksMinRefreshMs > config.jwksMaxRefreshMs) {
    throw new ConfigError(
      `--jwks-min-refresh (PLATFORM_JWKS_MIN_REFRESH) ${formatDuration(config.jwksMinRefreshMs)} must be at most --jwks-max-refresh (PLATFORM_JWKS_MAX_REFRESH) ${formatDuration(config.jwksMaxRefreshMs)}`,
    )
  }
}
