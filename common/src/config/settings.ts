// The settings machinery both processes share: one table row per setting, read from an
// environment variable or a flag (the flag wins), each value through its own parser. A value
// that does not parse is a ConfigError, which the processes turn into exit code 2.
import { isIPv4, isIPv6 } from 'node:net'
import { formatDuration, parseDuration } from './duration.js'

export class ConfigError extends Error {
  readonly code = 'ERR_CONFIG'
  constructor(message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

/** One setting of a configuration object `C`. `default` is written as an operator would type it. */
export type Setting<C, K extends keyof C = keyof C> = {
  key: K
  env: string
  flag: string
  default: string
  parse: (text: string) => C[K]
  help: string
  /** The value may hold a password: error messages leave it out. */
  secret?: boolean
}

/**
 * Read every setting from `argv` and `env`. A flag wins over its environment variable; an
 * empty variable counts as unset. --help is not special: it is an unknown flag like any
 * other, and the caller can print usage() after any ConfigError.
 */
export function readSettings<C>(
  settings: ReadonlyArray<Setting<C>>,
  argv: string[],
  env: Record<string, string | undefined>,
): C {
  const flags = readFlags(settings, argv)
  const values: Record<string, unknown> = {}
  for (const row of settings) {
    const flagValue = flags.get(row.flag)
    const envValue = env[row.env]
    const [source, value] =
      flagValue !== undefined
        ? [row.flag, flagValue]
        : envValue !== undefined && envValue !== ''
          ? [row.env, envValue]
          : [`the default of ${row.flag}`, row.default]
    try {
      values[row.key as string] = row.parse(value)
    } catch (err) {
      const shown = row.secret === true ? 'value' : `value ${JSON.stringify(value)}`
      throw new ConfigError(`invalid ${shown} for ${source}: ${(err as Error).message}`)
    }
  }
  return values as C
}

// Returns flag -> raw value text. Boolean flags never take the next word, so
// '--no-auth false' fails on 'false' instead of silently enabling no-auth.
function readFlags<C>(settings: ReadonlyArray<Setting<C>>, argv: string[]): Map<string, string> {
  const rows = new Map(settings.map((row) => [row.flag, row]))
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

/**
 * Whether `argv` asks for usage: `--help` anywhere. It cannot be a flag's value, since no value
 * starts with '--'. The process checks this before readSettings, which refuses --help like any
 * unknown flag.
 */
export function helpRequested(argv: readonly string[]): boolean {
  return argv.includes('--help')
}

/**
 * What --help prints, from the same table readSettings reads: every setting's flag, environment
 * variable, default and help text. `command` adds the synopsis line.
 */
export function usage<C>(settings: ReadonlyArray<Setting<C>>, command?: string): string {
  const lines = settings.map((row) => {
    const shown = row.default === '' ? '' : ` (default ${row.default})`
    return `  ${row.flag}, ${row.env}${shown}\n      ${row.help}`
  })
  const synopsis = command === undefined ? '' : `Usage: ${command} [--flag value | --flag=value]...\n\n`
  return `${synopsis}Options (a flag overrides its environment variable):\n${lines.join('\n')}\n`
}

/** Whether the setting `key` was given (flag or environment), as opposed to left at its default. */
export function settingGiven<C>(
  settings: ReadonlyArray<Setting<C>>,
  key: keyof C,
  argv: string[],
  env: Record<string, string | undefined>,
): boolean {
  const row = settings.find((candidate) => candidate.key === key)
  if (row === undefined) return false
  return readFlags(settings, argv).has(row.flag) || env[row.env] !== undefined
}

/**
 * The listen address of a process whose authentication is off: the default becomes loopback,
 * and any other given address is refused unless `anywhere` says the operator means it
 * (whoever reaches the port would have the API).
 */
export function unauthenticatedAddress(
  address: ListenAddress,
  given: boolean,
  anywhere: { allowed: boolean; flag: string; authFlag: string },
): ListenAddress {
  if (!given) return { host: '127.0.0.1', port: address.port }
  if (anywhere.allowed || isLoopbackHost(address.host)) return address
  const shown = address.host === '' ? `:${address.port} (every interface)` : `${address.host}:${address.port}`
  throw new ConfigError(
    `${anywhere.authFlag} with a listen address that is not loopback (${shown}) would hand the API to anyone who can reach it: listen on 127.0.0.1 or [::1], turn authentication on, or set ${anywhere.flag}`,
  )
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)
}

// ---- parsers shared by both processes ----

export type ListenAddress = { host: string; port: number } // host '' = all interfaces

export function parseListenAddress(text: string): ListenAddress {
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

const byteUnits = new Map([
  ['', 1],
  ['KiB', 1024],
  ['MiB', 1024 ** 2],
  ['GiB', 1024 ** 3],
])

// Plain byte count or a KiB/MiB/GiB multiple, e.g. 16MiB.
export function parseBytes(text: string): number {
  const [, digits, unit] = /^([0-9]+)([A-Za-z]*)$/.exec(text) ?? []
  const bytes = Number(digits) * (byteUnits.get(unit ?? '') ?? NaN)
  if (!Number.isSafeInteger(bytes)) throw new Error(`invalid byte size ${JSON.stringify(text)}`)
  return bytes
}

export function parsePositiveBytes(text: string): number {
  const bytes = parseBytes(text)
  if (bytes <= 0) throw new Error('must be greater than 0')
  return bytes
}

export function parseBoolean(text: string): boolean {
  const lower = text.toLowerCase()
  if (lower === 'true' || lower === '1') return true
  if (lower === 'false' || lower === '0') return false
  throw new Error('expected true, false, 1 or 0')
}

// Node timers fire at once, with a warning, for delays above 2^31-1 ms.
const maxTimerMs = 2 ** 31 - 1

/** A Go duration that can drive a timer: greater than 0 and at most 2^31-1 ms. */
export function parseTimerDuration(text: string): number {
  const ms = parseDuration(text)
  if (ms <= 0) throw new Error('must be greater than 0')
  if (ms > maxTimerMs) throw new Error(`must be at most ${formatDuration(maxTimerMs)}`)
  return ms
}

// The exact text is kept: an issuer must equal the tokens' iss claim byte for byte,
// including any trailing slash.
export function parseHttpUrl(text: string): string {
  if (text === '') return ''
  if (!/^https?:\/\//i.test(text) || !URL.canParse(text))
    throw new Error('expected an absolute http:// or https:// URL')
  return text
}

export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

export function parseLogLevel(text: string): string {
  const level = text.toLowerCase()
  if (!logLevels.includes(level)) throw new Error(`expected one of ${logLevels.join(', ')}`)
  return level
}

// Free text such as file paths and ids: anything goes.
export const anyText = (value: string): string => value
