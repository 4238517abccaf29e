import { isIPv4, isIPv6 } from 'node:net'
import { formatDuration, parseDuration } from './duration.js'
import { ConfigError } from './errors.js'
import { compileOriginPolicy } from './origins.js'

export type ListenAddress = { host: string; port: number } // host '' = all interfaces

export type RelayConfig = {
  addr: ListenAddress
  oidcIssuer: string
  oidcAudience: string
  oidcClientId: string
  sessionTtlMs: number
  peerWaitMs: number
  reapIntervalMs: number
  publicBaseUrl: string // without trailing slash
  allowedOrigins: string[] // patterns, trimmed, empties removed
  tlsCert: string
  tlsKey: string
  noAuth: boolean
  maxFrameSize: number // -1 = unlimited, else positive integer bytes
  maxBacklog: number // per-connection outgoing backlog limit, bytes
  maxTotalBacklog: number // whole-process outgoing backlog limit, bytes
  logLevel: string // pino level: fatal,error,warn,info,debug,trace,silent
}

// One row per setting. The default is written in the same syntax an operator
// would use and goes through the same parser, so the table documents itself.
export type Setting<K extends keyof RelayConfig = keyof RelayConfig> = {
  key: K
  env: string
  flag: string
  default: string
  parse: (text: string) => RelayConfig[K]
  help: string
}

// Only ties each parser's return type to its key.
const setting = <K extends keyof RelayConfig>(row: Setting<K>): Setting<K> => row

// Node timers fire at once, with a warning, for delays above 2^31-1 ms.
const maxTimerMs = 2 ** 31 - 1

export function parseListenAddress (text: string): ListenAddress {
  const invalid = (why: string): Error => new Error(`invalid listen address ${JSON.stringify(text)}: ${why}`)
  let host: string
  let portText: string
  if (text.startsWith('[')) {
    const end = text.indexOf(']')
    if (end === -1) throw invalid('missing "]"')
    host = text.slice(1, end)
    if (!isIPv6(host)) throw invalid('bad IPv6 address')
    if (text[end + 1] !== ':') throw invalid('missing port, e.g. [::1]:8080')
    portText = text.slice(end + 2)
  } else {
    const colon = text.indexOf(':')
    if (colon === -1) throw invalid('missing port, e.g. :8080 or 127.0.0.1:8080')
    if (colon !== text.lastIndexOf(':')) throw invalid('put IPv6 addresses in brackets, e.g. [::1]:8080')
    host = text.slice(0, colon)
    portText = text.slice(colon + 1)
    // Dotted numbers must be a real IPv4 address, not a name that fails at bind.
    const looksIPv4 = /^[0-9.]+$/.test(host)
    if (host !== '' && (looksIPv4 ? !isIPv4(host) : !/^[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*$/.test(host))) {
      throw invalid('bad host')
    }
  }
  if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) > 65535) throw invalid('port must be 0 to 65535')
  return { host, port: Number(portText) }
}

const byteUnits = new Map([['', 1], ['KiB', 1024], ['MiB', 1024 ** 2], ['GiB', 1024 ** 3]])

// Plain byte count or a KiB/MiB/GiB multiple, e.g. 16MiB.
export function parseBytes (text: string): number {
  const [, digits, unit] = /^([0-9]+)([A-Za-z]*)$/.exec(text) ?? []
  const bytes = Number(digits) * (byteUnits.get(unit ?? '') ?? NaN)
  if (!Number.isSafeInteger(bytes)) throw new Error(`invalid byte size ${JSON.stringify(text)}`)
  return bytes
}

function parseBoolean (text: string): boolean {
  const lower = text.toLowerCase()
  if (lower === 'true' || lower === '1') return true
  if (lower === 'false' || lower === '0') return false
  throw new Error('expected true, false, 1 or 0')
}

function parseTimerDuration (text: string): number {
  const ms = parseDuration(text)
  if (ms <= 0) throw new Error('must be greater than 0')
  if (ms > maxTimerMs) throw new Error(`must be at most ${formatDuration(maxTimerMs)}`)
  return ms
}

function parsePositiveBytes (text: string): number {
  const bytes = parseBytes(text)
  if (bytes <= 0) throw new Error('must be greater than 0')
  return bytes
}

function parseFrameSize (text: string): number {
  if (text === '-1') return -1
  const size = /^[0-9]+$/.test(text) ? Number(text) : NaN
  if (!Number.isSafeInteger(size) || size <= 0) throw new Error('expected -1 (unlimited) or a positive integer')
  return size
}

// The exact text is kept: the issuer must equal the tokens' iss claim
// byte for byte, including any trailing slash.
function parseIssuer (text: string): string {
  if (text === '') return '' // checked against --no-auth once everything is parsed
  if (!/^https?:\/\//i.test(text) || !URL.canParse(text)) throw new Error('expected an absolute http:// or https:// URL')
  return text
}

// Paths get appended to this, so a query or fragment would end up in the middle.
function parsePublicBaseUrl (text: string): string {
  if (text === '') return ''
  if (!/^wss?:\/\//i.test(text) || !URL.canParse(text)) throw new Error('expected an absolute ws:// or wss:// URL')
  const url = new URL(text)
  if (url.search !== '' || url.hash !== '' || text.includes('?') || text.includes('#')) {
    throw new Error('must not have a query or fragment')
  }
  return text.endsWith('/') ? text.slice(0, -1) : text
}

// Patterns are compiled here only to reject typos at start.
function parseOrigins (text: string): string[] {
  const patterns = text.split(',').map((pattern) => pattern.trim()).filter((pattern) => pattern !== '')
  compileOriginPolicy(patterns)
  return patterns
}

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

function parseLogLevel (text: string): string {
  const level = text.toLowerCase()
  if (!logLevels.includes(level)) throw new Error(`expected one of ${logLevels.join(', ')}`)
  return level
}

// Free text such as file paths and ids: anything goes.
const anyText = (value: string): string => value

export const settings = [
  setting({ key: 'addr', env: 'RELAY_ADDR', flag: '--addr', default: ':8080', parse: parseListenAddress, help: 'listen address: :port, host:port or [ipv6]:port; port 0 picks a free port' }),
  setting({ key: 'oidcIssuer', env: 'RELAY_OIDC_ISSUER', flag: '--oidc-issuer', default: '', parse: parseIssuer, help: 'OIDC issuer URL, exactly as in the tokens; required unless --no-auth' }),
  setting({ key: 'oidcAudience', env: 'RELAY_OIDC_AUDIENCE', flag: '--oidc-audience', default: '', parse: anyText, help: 'expected token audience' }),
  setting({ key: 'oidcClientId', env: 'RELAY_OIDC_CLIENT_ID', flag: '--oidc-client-id', default: '', parse: anyText, help: 'OIDC client id' }),
  setting({ key: 'sessionTtlMs', env: 'RELAY_SESSION_TTL', flag: '--session-ttl', default: '1h', parse: parseTimerDuration, help: 'session lifetime, Go duration such as 1h or 90m' }),
  setting({ key: 'peerWaitMs', env: 'RELAY_PEER_WAIT', flag: '--peer-wait', default: '2m', parse: parseTimerDuration, help: 'how long a connection waits for its peer' }),
  setting({ key: 'reapIntervalMs', env: 'RELAY_REAP_INTERVAL', flag: '--reap-interval', default: '30s', parse: parseTimerDuration, help: 'how often expired sessions are removed' }),
  setting({ key: 'publicBaseUrl', env: 'RELAY_PUBLIC_BASE_URL', flag: '--public-base-url', default: '', parse: parsePublicBaseUrl, help: 'ws:// or wss:// URL clients use to reach the relay' }),
  setting({ key: 'allowedOrigins', env: 'RELAY_ALLOWED_ORIGINS', flag: '--allowed-origins', default: '', parse: parseOrigins, help: 'comma-separated browser origin host patterns (example.com, *.example.com:*); same-origin always allowed' }),
  setting({ key: 'tlsCert', env: 'RELAY_TLS_CERT', flag: '--tls-cert', default: '', parse: anyText, help: 'TLS certificate file (PEM); needs --tls-key' }),
  setting({ key: 'tlsKey', env: 'RELAY_TLS_KEY', flag: '--tls-key', default: '', parse: anyText, help: 'TLS private key file (PEM); needs --tls-cert' }),
  setting({ key: 'noAuth', env: 'RELAY_NO_AUTH', flag: '--no-auth', default: 'false', parse: parseBoolean, help: 'disable authentication (development only)' }),
  setting({ key: 'maxFrameSize', env: 'RELAY_MAX_FRAME_SIZE', flag: '--max-frame-size', default: '-1', parse: parseFrameSize, help: 'largest accepted frame in bytes; -1 = unlimited' }),
  setting({ key: 'maxBacklog', env: 'RELAY_MAX_BACKLOG', flag: '--max-backlog', default: '16MiB', parse: parsePositiveBytes, help: 'outgoing backlog limit per connection, bytes or KiB/MiB/GiB' }),
  setting({ key: 'maxTotalBacklog', env: 'RELAY_MAX_TOTAL_BACKLOG', flag: '--max-total-backlog', default: '1GiB', parse: parsePositiveBytes, help: 'outgoing backlog limit for the whole process; at least --max-backlog' }),
  setting({ key: 'logLevel', env: 'RELAY_LOG_LEVEL', flag: '--log-level', default: 'info', parse: parseLogLevel, help: `log level: ${logLevels.join(', ')}` }),
]

// Fails to compile when a RelayConfig field has no row in the table.
type MissingSettings = Exclude<keyof RelayConfig, (typeof settings)[number]['key']>
const everySettingListed: [MissingSettings] extends [never] ? true : MissingSettings = true
void everySettingListed

// A flag wins over its environment variable; an empty variable counts as
// unset. --help is deliberately not special: it is an unknown flag like any
// other, and the caller can print usage() after any ConfigError.
export function parseConfig (argv: string[], env: Record<string, string | undefined>): RelayConfig {
  const flags = readFlags(argv)
  const values: Record<string, unknown> = {}
  for (const row of settings) {
    const flagValue = flags.get(row.flag)
    const envValue = env[row.env]
    const [source, value] =
      flagValue !== undefined ? [row.flag, flagValue]
      : envValue !== undefined && envValue !== '' ? [row.env, envValue]
      : [`the default of ${row.flag}`, row.default]
    try {
      values[row.key] = row.parse(value)
    } catch (err) {
      throw new ConfigError(`invalid value ${JSON.stringify(value)} for ${source}: ${(err as Error).message}`)
    }
  }
  const config = values as RelayConfig

  if (!config.noAuth && config.oidcIssuer === '') {
    throw new ConfigError('--oidc-issuer (RELAY_OIDC_ISSUER) is required unless --no-auth is set')
  }
  if ((config.tlsCert === '') !== (config.tlsKey === '')) {
    throw new ConfigError('--tls-cert (RELAY_TLS_CERT) and --tls-key (RELAY_TLS_KEY) must be set together')
  }
  if (config.maxTotalBacklog < config.maxBacklog) {
    throw new ConfigError(
      `--max-total-backlog (RELAY_MAX_TOTAL_BACKLOG) ${config.maxTotalBacklog} must be at least --max-backlog (RELAY_MAX_BACKLOG) ${config.maxBacklog}`,
    )
  }
  return config
}

// Returns flag -> raw value text. Boolean flags never take the next word, so
// '--no-auth false' fails on 'false' instead of silently enabling no-auth.
function readFlags (argv: string[]): Map<string, string> {
  const rows = new Map<string, Setting>(settings.map((row) => [row.flag, row]))
  const values = new Map<string, string>()
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (!arg.startsWith('--') || arg === '--') throw new ConfigError(`unexpected argument ${JSON.stringify(arg)}`)
    const equals = arg.indexOf('=')
    const flag = equals === -1 ? arg : arg.slice(0, equals)
    const row = rows.get(flag)
    if (row === undefined) throw new ConfigError(`unknown flag ${flag}`)
    if (equals !== -1) {
      values.set(flag, arg.slice(equals + 1))
    } else if (row.parse === parseBoolean) {
      values.set(flag, 'true')
    } else {
      // No real value starts with '--', so one there means the value was
      // forgotten; a single dash is a value ('--max-frame-size -1').
      const next = argv[i + 1]
      if (next === undefined || next.startsWith('--')) throw new ConfigError(`missing value for ${flag}`)
      values.set(flag, next)
      i++
    }
  }
  return values
}

export function usage (): string {
  const lines = settings.map((row) => {
    const shown = row.default === '' ? '' : ` (default ${row.default})`
    return `  ${row.flag}, ${row.env}${shown}\n      ${row.help}`
  })
  return `Options (a flag overrides its environment variable):\n${lines.join('\n')}\n`
}
