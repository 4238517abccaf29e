import type { ListenAddress, Setting } from '@session-relay/common/config/settings'
import {
  anyText,
  settingGiven,
  unauthenticatedAddress,
  ConfigError,
  logLevels,
  parseBoolean,
  parseHttpUrl,
  parseListenAddress,
  parseLogLevel,
  parsePositiveBytes,
  parseTimerDuration,
  readSettings,
  usage,
} from '@session-relay/common/config/settings'
import { formatDuration, parseDuration } from '@session-relay/common/config/duration'
import type { RateLimit } from './http/admission.js'
import { compileOriginPolicy } from './http/origins.js'

export type RelayConfig = {
  addr: ListenAddress
  oidcIssuer: string
  oidcAudience: string
  oidcClientId: string
  jwksMinRefreshMs: number // the provider's signing keys are refetched no sooner than this...
  jwksMaxRefreshMs: number // ...and no later than this, whatever their Cache-Control says
  sessionTtlMs: number
  peerWaitMs: number
  reapIntervalMs: number
  publicBaseUrl: string // without trailing slash
  allowedOrigins: string[] // patterns, trimmed, empties removed
  tlsCert: string
  tlsKey: string
  noAuth: boolean
  devInsecureListenAnywhere: boolean
  maxFrameSize: number // -1 = unlimited, else positive integer bytes
  maxBacklog: number // per-connection outgoing backlog limit, bytes
  maxTotalBacklog: number // whole-process outgoing backlog limit, bytes
  logLevel: string // pino level: fatal,error,warn,info,debug,trace,silent
  attachFailureLimit: RateLimit | null // refused attaches per client address; null = off
  adminAuthFailureLimit: RateLimit | null // admin 401s per client address; null = off
  sessionCreateLimit: RateLimit | null // sessions created per client address; null = off
  limitAddresses: number // addresses each of those limits tracks at most
  maxSessions: number // sessions the table holds at most, closed ones until the sweep included
  maxHeadersSize: number // bytes of a request head (request line and headers); uWS answers 431 past it
  maxSessionsPerCaller: number | null // sessions one caller holds at once; null = no cap of its own
  callerClaim: string // the token claim that names the caller for maxSessionsPerCaller
  defaultSessionBytes: number | null // a session's byte limit when its create body sets none; null = --max-session-bytes
  maxSessionBytes: number | null // the largest byte limit a create body may set; null = no maximum
  defaultSessionRate: number | null // bytes per second per direction when a create body sets none; null = --max-session-rate
  maxSessionRate: number | null // the highest rate a create body may set; null = no maximum
  drainTimeoutMs: number // on SIGTERM, how long existing sessions may go on before the rest get 1001
}

// Only ties each parser's return type to its key.
const setting = <K extends keyof RelayConfig>(row: Setting<RelayConfig, K>): Setting<RelayConfig, K> => row

function parseFrameSize(text: string): number {
  if (text === '-1') return -1
  const size = /^[0-9]+$/.test(text) ? Number(text) : NaN
  if (!Number.isSafeInteger(size) || size <= 0) throw new Error('expected -1 (unlimited) or a positive integer')
  return size
}

// `count/duration` such as 30/1m, or `off`.
function parseRateLimit(text: string): RateLimit | null {
  if (text === 'off') return null
  const [, digits, window] = /^([0-9]+)\/(.+)$/.exec(text) ?? []
  const count = Number(digits)
  if (digits === undefined || window === undefined || !Number.isSafeInteger(count) || count <= 0) {
    throw new Error('expected count/duration such as 30/1m, or off')
  }
  const windowMs = parseDuration(window)
  if (windowMs < 1) throw new Error(`the window must be at least 1ms, not ${formatDuration(windowMs)}`)
  return { count, windowMs }
}

function parseCap(text: string): number | null {
  return text === 'off' ? null : parsePositiveInteger(text)
}

function parseByteCap(text: string): number | null {
  return text === 'off' ? null : parsePositiveBytes(text)
}

function parseClaimName(text: string): string {
  if (text === '') throw new Error('expected a claim name such as sub')
  return text
}

function parsePositiveInteger(text: string): number {
  const value = /^[0-9]+$/.test(text) ? Number(text) : NaN
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error('expected a positive integer')
  return value
}

// uWS keeps up to this much of an unfinished request head per connection: bounded, so that a
// slow sender of endless headers costs bounded memory.
const MAX_HEADERS_CEILING = 1024 * 1024
function parseHeadersSize(text: string): number {
  const size = parsePositiveBytes(text)
  if (size > MAX_HEADERS_CEILING) throw new Error('must be at most 1MiB')
  return size
}

// Paths get appended to this, so a query or fragment would end up in the middle.
function parsePublicBaseUrl(text: string): string {
  if (text === '') return ''
  if (!/^wss?:\/\//i.test(text) || !URL.canParse(text)) throw new Error('expected an absolute ws:// or wss:// URL')
  const url = new URL(text)
  if (url.search !== '' || url.hash !== '' || text.includes('?') || text.includes('#')) {
    throw new Error('must not have a query or fragment')
  }
  return text.endsWith('/') ? text.slice(0, -1) : text
}

// Patterns are compiled here only to reject typos at start (the scheme plays no part in that).
function parseOrigins(text: string): string[] {
  const patterns = text
    .split(',')
    .map((pattern) => pattern.trim())
    .filter((pattern) => pattern !== '')
  compileOriginPolicy(patterns, 'https')
  return patterns
}

// One row per setting. The default is written in the same syntax an operator
// would use and goes through the same parser, so the table documents itself.
export const settings = [
  setting({
    key: 'addr',
    env: 'RELAY_ADDR',
    flag: '--addr',
    default: ':8080',
    parse: parseListenAddress,
    help: 'listen address (:8080, 127.0.0.1:9000, [::1]:9000); port 0 picks a free one',
  }),
  setting({
    key: 'oidcIssuer',
    env: 'RELAY_OIDC_ISSUER',
    flag: '--oidc-issuer',
    default: '',
    parse: parseHttpUrl,
    help: 'OIDC issuer URL, exactly as in the tokens; required unless --no-auth',
  }),
  setting({
    key: 'oidcAudience',
    env: 'RELAY_OIDC_AUDIENCE',
    flag: '--oidc-audience',
    default: '',
    parse: anyText,
    help: 'expected aud of admin tokens; empty disables the check (logged as a warning)',
  }),
  setting({
    key: 'oidcClientId',
    env: 'RELAY_OIDC_CLIENT_ID',
    flag: '--oidc-client-id',
    default: '',
    parse: anyText,
    help: 'OAuth client id shown as client_id_hint in the discovery document',
  }),
  setting({
    key: 'jwksMinRefreshMs',
    env: 'RELAY_JWKS_MIN_REFRESH',
    flag: '--jwks-min-refresh',
    default: '1m',
    parse: parseTimerDuration,
    help: "floor of the JWKS's Cache-Control max-age: keys refetched no more often",
  }),
  setting({
    key: 'jwksMaxRefreshMs',
    env: 'RELAY_JWKS_MAX_REFRESH',
    flag: '--jwks-max-refresh',
    default: '1h',
    parse: parseTimerDuration,
    help: 'ceiling of that max-age: the longest a withdrawn key stays trusted',
  }),
  setting({
    key: 'sessionTtlMs',
    env: 'RELAY_SESSION_TTL',
    flag: '--session-ttl',
    default: '1h',
    parse: parseTimerDuration,
    help: 'session lifetime',
  }),
  setting({
    key: 'peerWaitMs',
    env: 'RELAY_PEER_WAIT',
    flag: '--peer-wait',
    default: '2m',
    parse: parseTimerDuration,
    help: 'how long an empty slot may stay empty once the session has had a peer',
  }),
  setting({
    key: 'reapIntervalMs',
    env: 'RELAY_REAP_INTERVAL',
    flag: '--reap-interval',
    default: '30s',
    parse: parseTimerDuration,
    help: 'cadence of the sweep that removes closed and expired sessions',
  }),
  setting({
    key: 'publicBaseUrl',
    env: 'RELAY_PUBLIC_BASE_URL',
    flag: '--public-base-url',
    default: '',
    parse: parsePublicBaseUrl,
    help: 'ws:// or wss:// base of initiator_url and responder_url',
  }),
  setting({
    key: 'allowedOrigins',
    env: 'RELAY_ALLOWED_ORIGINS',
    flag: '--allowed-origins',
    default: '',
    parse: parseOrigins,
    help: 'host patterns (comma-separated) allowed as Origin and CORS; empty: same-origin',
  }),
  setting({
    key: 'tlsCert',
    env: 'RELAY_TLS_CERT',
    flag: '--tls-cert',
    default: '',
    parse: anyText,
    help: 'TLS certificate file (PEM); with --tls-key the relay serves TLS itself',
  }),
  setting({
    key: 'tlsKey',
    env: 'RELAY_TLS_KEY',
    flag: '--tls-key',
    default: '',
    parse: anyText,
    help: 'TLS private key file (PEM); needs --tls-cert',
  }),
  setting({
    key: 'noAuth',
    env: 'RELAY_NO_AUTH',
    flag: '--no-auth',
    default: 'false',
    parse: parseBoolean,
    help: 'development only: no token on the admin API, loopback only',
  }),
  setting({
    key: 'devInsecureListenAnywhere',
    env: 'RELAY_DEV_INSECURE_LISTEN_ANYWHERE',
    flag: '--dev-insecure-listen-anywhere',
    default: 'false',
    parse: parseBoolean,
    help: 'with --no-auth, allow a non-loopback --addr',
  }),
  setting({
    key: 'maxFrameSize',
    env: 'RELAY_MAX_FRAME_SIZE',
    flag: '--max-frame-size',
    default: '-1',
    parse: parseFrameSize,
    help: 'largest message accepted from a peer, bytes; -1: no limit of its own',
  }),
  setting({
    key: 'maxBacklog',
    env: 'RELAY_MAX_BACKLOG',
    flag: '--max-backlog',
    default: '16MiB',
    parse: parsePositiveBytes,
    help: 'per connection: bytes waiting to reach the peer; past it the session closes',
  }),
  setting({
    key: 'maxTotalBacklog',
    env: 'RELAY_MAX_TOTAL_BACKLOG',
    flag: '--max-total-backlog',
    default: '1GiB',
    parse: parsePositiveBytes,
    help: 'the same across the process; past it the furthest behind close',
  }),
  setting({
    key: 'attachFailureLimit',
    env: 'RELAY_ATTACH_FAILURE_LIMIT',
    flag: '--attach-failure-limit',
    default: '30/1m',
    parse: parseRateLimit,
    help: 'refused attaches per client address (count/duration), then 429; off',
  }),
  setting({
    key: 'adminAuthFailureLimit',
    env: 'RELAY_ADMIN_AUTH_FAILURE_LIMIT',
    flag: '--admin-auth-failure-limit',
    default: '30/1m',
    parse: parseRateLimit,
    help: 'admin 401s per client address (count/duration), then 429; off',
  }),
  setting({
    key: 'sessionCreateLimit',
    env: 'RELAY_SESSION_CREATE_LIMIT',
    flag: '--session-create-limit',
    default: '1200/1m',
    parse: parseRateLimit,
    help: 'sessions created per client address; past it creation answers 429; off disables',
  }),
  setting({
    key: 'limitAddresses',
    env: 'RELAY_LIMIT_ADDRESSES',
    flag: '--limit-addresses',
    default: '100000',
    parse: parsePositiveInteger,
    help: 'client addresses each of those limits tracks at most',
  }),
  setting({
    key: 'maxSessions',
    env: 'RELAY_MAX_SESSIONS',
    flag: '--max-sessions',
    default: '100000',
    parse: parsePositiveInteger,
    help: 'sessions held at once (closed ones count until the sweep); past it creation answers 503',
  }),
  setting({
    key: 'maxSessionsPerCaller',
    env: 'RELAY_MAX_SESSIONS_PER_CALLER',
    flag: '--max-sessions-per-caller',
    default: '1000',
    parse: parseCap,
    help: 'sessions one caller holds at once, then 429; off disables',
  }),
  setting({
    key: 'callerClaim',
    env: 'RELAY_CALLER_CLAIM',
    flag: '--caller-claim',
    default: 'sub',
    parse: parseClaimName,
    help: 'the admin token claim naming the caller for --max-sessions-per-caller',
  }),
  setting({
    key: 'maxHeadersSize',
    env: 'RELAY_MAX_HEADERS_SIZE',
    flag: '--max-headers-size',
    default: '32KiB',
    parse: parseHeadersSize,
    help: 'largest request head in bytes (at most 1MiB); past it 431',
  }),
  setting({
    key: 'defaultSessionBytes',
    env: 'RELAY_DEFAULT_SESSION_BYTES',
    flag: '--default-session-bytes',
    default: 'off',
    parse: parseByteCap,
    help: 'byte limit of a session whose create body sets no max_bytes',
  }),
  setting({
    key: 'maxSessionBytes',
    env: 'RELAY_MAX_SESSION_BYTES',
    flag: '--max-session-bytes',
    default: 'off',
    parse: parseByteCap,
    help: 'the largest max_bytes a create body may ask for; off: no maximum',
  }),
  setting({
    key: 'defaultSessionRate',
    env: 'RELAY_DEFAULT_SESSION_RATE',
    flag: '--default-session-rate',
    default: 'off',
    parse: parseByteCap,
    help: 'bytes per second per direction when a create body sets no rate',
  }),
  setting({
    key: 'maxSessionRate',
    env: 'RELAY_MAX_SESSION_RATE',
    flag: '--max-session-rate',
    default: 'off',
    parse: parseByteCap,
    help: 'the highest bytes_per_second a create body may ask for; off: no maximum',
  }),
  setting({
    key: 'drainTimeoutMs',
    env: 'RELAY_DRAIN_TIMEOUT',
    flag: '--drain-timeout',
    default: '10m',
    parse: parseTimerDuration,
    help: 'on SIGTERM, how long existing sessions may go on before the relay exits',
  }),
  setting({
    key: 'logLevel',
    env: 'RELAY_LOG_LEVEL',
    flag: '--log-level',
    default: 'info',
    parse: parseLogLevel,
    help: `pino log level, one of ${logLevels.join(', ')}`,
  }),
]

// Fails to compile when a RelayConfig field has no row in the table.
type MissingSettings = Exclude<keyof RelayConfig, (typeof settings)[number]['key']>
const everySettingListed: [MissingSettings] extends [never] ? true : MissingSettings = true
void everySettingListed

export function parseConfig(argv: string[], env: Record<string, string | undefined>): RelayConfig {
  const config = readSettings(settings, argv, env)
  if (!config.noAuth && config.oidcIssuer === '') {
    throw new ConfigError('--oidc-issuer (RELAY_OIDC_ISSUER) is required unless --no-auth is set')
  }
  if (config.noAuth) {
    config.addr = unauthenticatedAddress(config.addr, settingGiven(settings, 'addr', argv, env), {
      allowed: config.devInsecureListenAnywhere,
      flag: '--dev-insecure-listen-anywhere',
      authFlag: '--no-auth',
    })
  }
  if (config.jwksMinRefreshMs > config.jwksMaxRefreshMs) {
    throw new ConfigError(
      `--jwks-min-refresh (RELAY_JWKS_MIN_REFRESH) ${formatDuration(config.jwksMinRefreshMs)} must be at most --jwks-max-refresh (RELAY_JWKS_MAX_REFRESH) ${formatDuration(config.jwksMaxRefreshMs)}`,
    )
  }
  if ((config.tlsCert === '') !== (config.tlsKey === '')) {
    throw new ConfigError('--tls-cert (RELAY_TLS_CERT) and --tls-key (RELAY_TLS_KEY) must be set together')
  }
  if (
    config.defaultSessionBytes !== null &&
    config.maxSessionBytes !== null &&
    config.defaultSessionBytes > config.maxSessionBytes
  ) {
    throw new ConfigError(
      `--default-session-bytes (RELAY_DEFAULT_SESSION_BYTES) ${config.defaultSessionBytes} must be at most --max-session-bytes (RELAY_MAX_SESSION_BYTES) ${config.maxSessionBytes}`,
    )
  }
  if (
    config.defaultSessionRate !== null &&
    config.maxSessionRate !== null &&
    config.defaultSessionRate > config.maxSessionRate
  ) {
    throw new ConfigError(
      `--default-session-rate (RELAY_DEFAULT_SESSION_RATE) ${config.defaultSessionRate} must be at most --max-session-rate (RELAY_MAX_SESSION_RATE) ${config.maxSessionRate}`,
    )
  }
  if (config.maxTotalBacklog < config.maxBacklog) {
    throw new ConfigError(
      `--max-total-backlog (RELAY_MAX_TOTAL_BACKLOG) ${config.maxTotalBacklog} must be at least --max-backlog (RELAY_MAX_BACKLOG) ${config.maxBacklog}`,
    )
  }
  return config
}

/** What `relay --help` prints. */
export const relayUsage = (): string => usage(settings, 'relay')
