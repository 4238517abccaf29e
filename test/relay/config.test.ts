import t from 'tap'
import { parseBytes, parseListenAddress } from '@session-relay/common/config/settings'
import { parseConfig, relayUsage, settings } from '@session-relay/relay/config'
import type { RelayConfig } from '@session-relay/relay/config'
import { ConfigError } from '@session-relay/relay/errors'

const issuer = 'https://id.example.com/realms/relay/'
const withIssuer = { RELAY_OIDC_ISSUER: issuer }

// Runs parseConfig and returns the ConfigError message, failing otherwise.
function configError(argv: string[], env: Record<string, string | undefined> = withIssuer): string {
  try {
    parseConfig(argv, env)
  } catch (err) {
    if (err instanceof ConfigError) return err.message
    throw err
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(argv)} ${JSON.stringify(env)}`)
}

function errorMessage(fn: () => unknown): string {
  try {
    fn()
  } catch (err) {
    return (err as Error).message
  }
  return 'did not throw'
}

t.test('defaults', async (t) => {
  const expected: RelayConfig = {
    addr: { host: '', port: 8080 },
    oidcIssuer: issuer,
    oidcAudience: '',
    oidcClientId: '',
    jwksMinRefreshMs: 60_000,
    jwksMaxRefreshMs: 3_600_000,
    sessionTtlMs: 3_600_000,
    peerWaitMs: 120_000,
    reapIntervalMs: 30_000,
    publicBaseUrl: '',
    allowedOrigins: [],
    tlsCert: '',
    tlsKey: '',
    noAuth: false,
    devInsecureListenAnywhere: false,
    maxFrameSize: -1,
    maxBacklog: 16_777_216,
    maxTotalBacklog: 1_073_741_824,
    logLevel: 'info',
    attachFailureLimit: { count: 30, windowMs: 60_000 },
    adminAuthFailureLimit: { count: 30, windowMs: 60_000 },
    sessionCreateLimit: { count: 1200, windowMs: 60_000 },
    limitAddresses: 100_000,
    maxSessions: 100_000,
    maxHeadersSize: 32_768,
    maxSessionsPerCaller: 1000,
    callerClaim: 'sub',
    defaultSessionBytes: null,
    maxSessionBytes: null,
    defaultSessionRate: null,
    maxSessionRate: null,
    drainTimeoutMs: 600_000,
  }
  t.strictSame(parseConfig([], withIssuer), expected)
})

// Every setting, as [flag, env, text, expected field value]. Each text differs
// from the default so a setting that ignores its input fails.
const cases: [string, string, string, Partial<RelayConfig>][] = [
  ['--addr', 'RELAY_ADDR', '127.0.0.1:9000', { addr: { host: '127.0.0.1', port: 9000 } }],
  ['--oidc-issuer', 'RELAY_OIDC_ISSUER', 'http://other.example.com', { oidcIssuer: 'http://other.example.com' }],
  ['--oidc-audience', 'RELAY_OIDC_AUDIENCE', 'relay-api', { oidcAudience: 'relay-api' }],
  ['--oidc-client-id', 'RELAY_OIDC_CLIENT_ID', 'relay-cli', { oidcClientId: 'relay-cli' }],
  ['--jwks-min-refresh', 'RELAY_JWKS_MIN_REFRESH', '30s', { jwksMinRefreshMs: 30_000 }],
  ['--jwks-max-refresh', 'RELAY_JWKS_MAX_REFRESH', '2h', { jwksMaxRefreshMs: 7_200_000 }],
  ['--session-ttl', 'RELAY_SESSION_TTL', '2h45m', { sessionTtlMs: 9_900_000 }],
  ['--peer-wait', 'RELAY_PEER_WAIT', '1500ms', { peerWaitMs: 1500 }],
  ['--reap-interval', 'RELAY_REAP_INTERVAL', '1.5s', { reapIntervalMs: 1500 }],
  [
    '--public-base-url',
    'RELAY_PUBLIC_BASE_URL',
    'wss://relay.example.com/',
    { publicBaseUrl: 'wss://relay.example.com' },
  ],
  [
    '--allowed-origins',
    'RELAY_ALLOWED_ORIGINS',
    ' a.example.com, ,*.b.example.com:* ,',
    { allowedOrigins: ['a.example.com', '*.b.example.com:*'] },
  ],
  ['--no-auth', 'RELAY_NO_AUTH', 'true', { noAuth: true }],
  ['--dev-insecure-listen-anywhere', 'RELAY_DEV_INSECURE_LISTEN_ANYWHERE', 'true', { devInsecureListenAnywhere: true }],
  ['--max-frame-size', 'RELAY_MAX_FRAME_SIZE', '65536', { maxFrameSize: 65536 }],
  ['--max-backlog', 'RELAY_MAX_BACKLOG', '1MiB', { maxBacklog: 1_048_576 }],
  ['--max-total-backlog', 'RELAY_MAX_TOTAL_BACKLOG', '2GiB', { maxTotalBacklog: 2_147_483_648 }],
  ['--log-level', 'RELAY_LOG_LEVEL', 'debug', { logLevel: 'debug' }],
  [
    '--attach-failure-limit',
    'RELAY_ATTACH_FAILURE_LIMIT',
    '5/10s',
    { attachFailureLimit: { count: 5, windowMs: 10_000 } },
  ],
  [
    '--admin-auth-failure-limit',
    'RELAY_ADMIN_AUTH_FAILURE_LIMIT',
    '100/1h',
    { adminAuthFailureLimit: { count: 100, windowMs: 3_600_000 } },
  ],
  [
    '--session-create-limit',
    'RELAY_SESSION_CREATE_LIMIT',
    '10/1.5s',
    { sessionCreateLimit: { count: 10, windowMs: 1500 } },
  ],
  ['--limit-addresses', 'RELAY_LIMIT_ADDRESSES', '500', { limitAddresses: 500 }],
  ['--max-sessions', 'RELAY_MAX_SESSIONS', '7', { maxSessions: 7 }],
  ['--max-headers-size', 'RELAY_MAX_HEADERS_SIZE', '64KiB', { maxHeadersSize: 65_536 }],
  ['--drain-timeout', 'RELAY_DRAIN_TIMEOUT', '90s', { drainTimeoutMs: 90_000 }],
  ['--max-sessions-per-caller', 'RELAY_MAX_SESSIONS_PER_CALLER', '3', { maxSessionsPerCaller: 3 }],
  ['--caller-claim', 'RELAY_CALLER_CLAIM', 'azp', { callerClaim: 'azp' }],
  ['--default-session-bytes', 'RELAY_DEFAULT_SESSION_BYTES', '1GiB', { defaultSessionBytes: 1_073_741_824 }],
  ['--max-session-bytes', 'RELAY_MAX_SESSION_BYTES', '10GiB', { maxSessionBytes: 10_737_418_240 }],
  ['--default-session-rate', 'RELAY_DEFAULT_SESSION_RATE', '1MiB', { defaultSessionRate: 1_048_576 }],
  ['--max-session-rate', 'RELAY_MAX_SESSION_RATE', '100MiB', { maxSessionRate: 104_857_600 }],
]

t.test('admission limits: count/duration or off; bad values stop the start', async (t) => {
  for (const [flag, key] of [
    ['--attach-failure-limit', 'attachFailureLimit'],
    ['--admin-auth-failure-limit', 'adminAuthFailureLimit'],
    ['--session-create-limit', 'sessionCreateLimit'],
  ] as const) {
    t.equal(parseConfig([flag, 'off'], withIssuer)[key], null, `${flag} off`)
    for (const bad of ['0/1m', '5', '5/', '/1m', '5/0s', '5/1', '-1/1m', '1.5/1m', 'OFF', 'none']) {
      t.match(
        configError([flag, bad]),
        new RegExp(`^invalid value "${bad.replace(/[.]/g, '\\.')}" for ${flag}: `),
        `${flag} ${bad}`,
      )
    }
  }
  t.equal(
    parseConfig(['--max-sessions-per-caller', 'off'], withIssuer).maxSessionsPerCaller,
    null,
    '--max-sessions-per-caller off',
  )
  t.match(
    configError(['--max-sessions-per-caller', '0']),
    /^invalid value "0" for --max-sessions-per-caller: /,
    'a cap of 0',
  )
  t.match(
    configError(['--default-session-bytes', '2GiB', '--max-session-bytes', '1GiB']),
    /--default-session-bytes .* must be at most --max-session-bytes/,
    'a default above the maximum',
  )
  t.match(
    configError(['--default-session-rate', '2MiB', '--max-session-rate', '1MiB']),
    /--default-session-rate .* must be at most --max-session-rate/,
    'a default rate above the maximum',
  )
  t.match(configError(['--caller-claim', '']), /^invalid value "" for --caller-claim: /, 'an empty claim name')
  t.equal(
    configError(['--max-headers-size', '2MiB']),
    'invalid value "2MiB" for --max-headers-size: must be at most 1MiB',
    'a head larger than uWS should buffer per connection',
  )
  t.equal(configError(['--max-headers-size', '0']), 'invalid value "0" for --max-headers-size: must be greater than 0')
  for (const flag of ['--limit-addresses', '--max-sessions']) {
    for (const bad of ['0', '-5', '1.5', 'many', '1e3']) {
      t.equal(
        configError([flag, bad]),
        `invalid value "${bad}" for ${flag}: expected a positive integer`,
        `${flag} ${bad}`,
      )
    }
  }
})

t.test('every setting from env, --flag=value and --flag value', async (t) => {
  for (const [flag, env, text, expected] of cases) {
    t.match(parseConfig([], { ...withIssuer, [env]: text }), expected, `${env}=${text}`)
    t.match(parseConfig([`${flag}=${text}`], withIssuer), expected, `${flag}=${text}`)
    // Boolean flags take no next word.
    if (flag !== '--no-auth' && flag !== '--dev-insecure-listen-anywhere')
      t.match(parseConfig([flag, text], withIssuer), expected, `${flag} ${text}`)
  }
})

t.test('the JWKS refresh floor may not exceed its ceiling', async (t) => {
  t.equal(
    configError(['--jwks-min-refresh', '2h']),
    '--jwks-min-refresh (RELAY_JWKS_MIN_REFRESH) 2h0m0s must be at most --jwks-max-refresh (RELAY_JWKS_MAX_REFRESH) 1h0m0s',
  )
  t.equal(
    configError(['--jwks-max-refresh', '0s']),
    'invalid value "0s" for --jwks-max-refresh: must be greater than 0',
  )
  const equal = parseConfig(['--jwks-min-refresh', '5m', '--jwks-max-refresh', '5m'], withIssuer)
  t.equal(equal.jwksMinRefreshMs, equal.jwksMaxRefreshMs, 'equal is fine: a fixed interval')
})

t.test('tls cert and key together', async (t) => {
  const config = parseConfig(['--tls-cert', '/etc/relay/cert.pem', '--tls-key=/etc/relay/key.pem'], withIssuer)
  t.equal(config.tlsCert, '/etc/relay/cert.pem')
  t.equal(config.tlsKey, '/etc/relay/key.pem')
  const fromEnv = parseConfig([], { ...withIssuer, RELAY_TLS_CERT: 'c.pem', RELAY_TLS_KEY: 'k.pem' })
  t.equal(fromEnv.tlsCert, 'c.pem')
  t.equal(fromEnv.tlsKey, 'k.pem')
})

t.test('one of tls cert and key is an error', async (t) => {
  const message = '--tls-cert (RELAY_TLS_CERT) and --tls-key (RELAY_TLS_KEY) must be set together'
  t.equal(configError(['--tls-cert', 'c.pem']), message)
  t.equal(configError(['--tls-key', 'k.pem']), message)
  t.equal(configError([], { ...withIssuer, RELAY_TLS_CERT: 'c.pem' }), message)
  t.equal(configError([], { ...withIssuer, RELAY_TLS_KEY: 'k.pem' }), message)
})

t.test('a flag beats its env variable', async (t) => {
  const env = { ...withIssuer, RELAY_SESSION_TTL: '5m', RELAY_LOG_LEVEL: 'warn', RELAY_ADDR: ':1' }
  const config = parseConfig(['--session-ttl', '10m', '--log-level=error', '--addr', ':2'], env)
  t.equal(config.sessionTtlMs, 600_000)
  t.equal(config.logLevel, 'error')
  t.strictSame(config.addr, { host: '', port: 2 })
  t.equal(parseConfig(['--oidc-issuer', 'https://flag.example.com'], withIssuer).oidcIssuer, 'https://flag.example.com')
  t.equal(parseConfig(['--no-auth=false'], { ...withIssuer, RELAY_NO_AUTH: 'true' }).noAuth, false)
  t.equal(parseConfig(['--no-auth'], { ...withIssuer, RELAY_NO_AUTH: 'false' }).noAuth, true)
})

t.test('a bad env value is ignored when the flag is given', async (t) => {
  t.equal(parseConfig(['--peer-wait', '1s'], { ...withIssuer, RELAY_PEER_WAIT: 'nonsense' }).peerWaitMs, 1000)
})

t.test('an empty env variable counts as unset', async (t) => {
  const config = parseConfig([], {
    ...withIssuer,
    RELAY_ADDR: '',
    RELAY_SESSION_TTL: '',
    RELAY_MAX_FRAME_SIZE: '',
    RELAY_NO_AUTH: '',
  })
  t.strictSame(config.addr, { host: '', port: 8080 })
  t.equal(config.sessionTtlMs, 3_600_000)
  t.equal(config.maxFrameSize, -1)
  t.equal(config.noAuth, false)
  t.equal(
    configError([], { RELAY_OIDC_ISSUER: '' }),
    '--oidc-issuer (RELAY_OIDC_ISSUER) is required unless --no-auth is set',
  )
  t.match(parseConfig([], { ...withIssuer, RELAY_OIDC_AUDIENCE: undefined }), { oidcAudience: '' })
})

t.test('the last of a repeated flag wins', async (t) => {
  t.equal(parseConfig(['--log-level', 'warn', '--log-level', 'trace'], withIssuer).logLevel, 'trace')
})

t.test('boolean forms', async (t) => {
  for (const [text, expected] of [
    ['true', true],
    ['TRUE', true],
    ['True', true],
    ['1', true],
    ['false', false],
    ['FALSE', false],
    ['0', false],
  ] as const) {
    t.equal(parseConfig([], { ...withIssuer, RELAY_NO_AUTH: text }).noAuth, expected, `RELAY_NO_AUTH=${text}`)
    t.equal(parseConfig([`--no-auth=${text}`], withIssuer).noAuth, expected, `--no-auth=${text}`)
  }
  t.equal(parseConfig(['--no-auth'], {}).noAuth, true, 'bare flag means true')
  t.equal(
    configError([], { ...withIssuer, RELAY_NO_AUTH: 'yes' }),
    'invalid value "yes" for RELAY_NO_AUTH: expected true, false, 1 or 0',
  )
  t.equal(configError(['--no-auth=on']), 'invalid value "on" for --no-auth: expected true, false, 1 or 0')
  t.equal(configError(['--no-auth=']), 'invalid value "" for --no-auth: expected true, false, 1 or 0')
})

t.test('a bare boolean flag does not take the next word', async (t) => {
  t.equal(configError(['--no-auth', 'false']), 'unexpected argument "false"')
  t.equal(configError(['--no-auth', 'true']), 'unexpected argument "true"')
  t.equal(parseConfig(['--no-auth', '--log-level', 'warn'], {}).logLevel, 'warn')
})

t.test('issuer is required unless no-auth', async (t) => {
  const message = '--oidc-issuer (RELAY_OIDC_ISSUER) is required unless --no-auth is set'
  t.equal(configError([], {}), message)
  t.equal(configError(['--no-auth=false'], {}), message)
  t.equal(configError([], { RELAY_NO_AUTH: '0' }), message)
  t.equal(configError(['--oidc-issuer='], {}), message, 'an empty flag value is no issuer')
  t.equal(parseConfig(['--no-auth'], {}).oidcIssuer, '')
  t.equal(parseConfig([], { RELAY_NO_AUTH: '1' }).noAuth, true)
  t.equal(parseConfig(['--no-auth'], withIssuer).oidcIssuer, issuer, 'an issuer may still be set')
})

t.test('issuer must be an absolute http(s) URL, kept exactly', async (t) => {
  t.equal(parseConfig([], { RELAY_OIDC_ISSUER: 'https://id.example.com' }).oidcIssuer, 'https://id.example.com')
  t.equal(parseConfig([], { RELAY_OIDC_ISSUER: 'https://id.example.com/' }).oidcIssuer, 'https://id.example.com/')
  t.equal(parseConfig([], { RELAY_OIDC_ISSUER: 'http://localhost:9000/oidc' }).oidcIssuer, 'http://localhost:9000/oidc')
  for (const bad of [
    'id.example.com',
    '/oidc',
    'ftp://id.example.com',
    'https:id.example.com',
    'https://',
    'wss://id.example.com',
  ]) {
    t.equal(
      configError([`--oidc-issuer=${bad}`], {}),
      `invalid value ${JSON.stringify(bad)} for --oidc-issuer: expected an absolute http:// or https:// URL`,
      bad,
    )
  }
})

t.test('listen address forms', async (t) => {
  t.strictSame(parseListenAddress(':8080'), { host: '', port: 8080 })
  t.strictSame(parseListenAddress('127.0.0.1:9000'), { host: '127.0.0.1', port: 9000 })
  t.strictSame(parseListenAddress('0.0.0.0:80'), { host: '0.0.0.0', port: 80 })
  t.strictSame(parseListenAddress('[::1]:9000'), { host: '::1', port: 9000 })
  t.strictSame(parseListenAddress('[::]:9000'), { host: '::', port: 9000 })
  t.strictSame(parseListenAddress('localhost:9000'), { host: 'localhost', port: 9000 })
  t.strictSame(parseListenAddress('relay.internal.example.com:443'), { host: 'relay.internal.example.com', port: 443 })
  t.strictSame(parseListenAddress(':0'), { host: '', port: 0 }, 'port 0 picks a free port')
  t.strictSame(parseListenAddress(':65535'), { host: '', port: 65535 })
})

t.test('bad listen addresses', async (t) => {
  for (const bad of [
    '',
    'abc',
    '8080',
    ':',
    'localhost:',
    '[::1]',
    '[::1]9000',
    '[::1:9000',
    '[]:80',
    '[nothost]:80',
    '::1:9000',
    ':70000',
    ':65536',
    ':-1',
    ':+80',
    ':80a',
    ':8 0',
    ': 80',
    ':123456',
    'local host:80',
    'host/x:80',
    '1.2.3:80',
    '256.0.0.1:80',
    'a..b:80',
    '.a:80',
  ]) {
    const prefix = `invalid listen address ${JSON.stringify(bad)}: `
    t.ok(errorMessage(() => parseListenAddress(bad)).startsWith(prefix), bad)
  }
  t.equal(
    configError(['--addr', ':70000']),
    'invalid value ":70000" for --addr: invalid listen address ":70000": port must be 0 to 65535',
  )
  t.equal(
    configError([], { ...withIssuer, RELAY_ADDR: 'abc' }),
    'invalid value "abc" for RELAY_ADDR: invalid listen address "abc": missing port, e.g. :8080 or 127.0.0.1:8080',
  )
})

t.test('durations must be positive and fit a timer', async (t) => {
  for (const flag of ['--session-ttl', '--peer-wait', '--reap-interval']) {
    for (const bad of ['0', '0s', '-1s', '-0.5h']) {
      t.equal(
        configError([flag, bad]),
        `invalid value ${JSON.stringify(bad)} for ${flag}: must be greater than 0`,
        `${flag} ${bad}`,
      )
    }
    t.equal(configError([flag, '600h']), `invalid value "600h" for ${flag}: must be at most 596h31m23.647s`)
  }
  t.equal(configError(['--session-ttl', 'abc']), 'invalid value "abc" for --session-ttl: invalid duration "abc"')
  t.equal(configError(['--peer-wait=10']), 'invalid value "10" for --peer-wait: invalid duration "10"')
  t.equal(
    configError([], { ...withIssuer, RELAY_REAP_INTERVAL: '5 s' }),
    'invalid value "5 s" for RELAY_REAP_INTERVAL: invalid duration "5 s"',
  )
  t.equal(parseConfig(['--session-ttl', '596h31m23.647s'], withIssuer).sessionTtlMs, 2 ** 31 - 1)
  t.equal(parseConfig(['--peer-wait', '1ns'], withIssuer).peerWaitMs, 0.000001)
})

t.test('max frame size', async (t) => {
  t.equal(parseConfig(['--max-frame-size', '-1'], withIssuer).maxFrameSize, -1, 'a single dash value is a value')
  t.equal(parseConfig(['--max-frame-size=1'], withIssuer).maxFrameSize, 1)
  for (const bad of ['0', '-2', '-0', '1.5', 'abc', '1e3', '+5', ' 5', '', '1KiB', '99999999999999999999']) {
    t.equal(
      configError([`--max-frame-size=${bad}`]),
      `invalid value ${JSON.stringify(bad)} for --max-frame-size: expected -1 (unlimited) or a positive integer`,
      bad,
    )
  }
})

t.test('parseBytes', async (t) => {
  t.equal(parseBytes('0'), 0)
  t.equal(parseBytes('1000'), 1000)
  t.equal(parseBytes('1KiB'), 1024)
  t.equal(parseBytes('16MiB'), 16_777_216)
  t.equal(parseBytes('3GiB'), 3_221_225_472)
  for (const bad of [
    '',
    'KiB',
    '1.5MiB',
    '1kib',
    '1KB',
    '1MB',
    '1 MiB',
    '-1',
    '1TiB',
    '1B',
    '0x10',
    '99999999999999999999GiB',
    'toString',
  ]) {
    t.throws(() => parseBytes(bad), { message: `invalid byte size ${JSON.stringify(bad)}` }, bad)
  }
})

t.test('backlog limits', async (t) => {
  const config = parseConfig(['--max-backlog', '64KiB', '--max-total-backlog', '65536'], withIssuer)
  t.equal(config.maxBacklog, 65536)
  t.equal(config.maxTotalBacklog, 65536, 'equal limits are fine')
  t.equal(configError(['--max-backlog', '0']), 'invalid value "0" for --max-backlog: must be greater than 0')
  t.equal(
    configError(['--max-total-backlog', '0GiB']),
    'invalid value "0GiB" for --max-total-backlog: must be greater than 0',
  )
  t.equal(
    configError(['--max-backlog', '2MiB', '--max-total-backlog', '1MiB']),
    '--max-total-backlog (RELAY_MAX_TOTAL_BACKLOG) 1048576 must be at least --max-backlog (RELAY_MAX_BACKLOG) 2097152',
  )
  t.match(
    configError(['--max-backlog', '2GiB']),
    /^--max-total-backlog .* must be at least --max-backlog/,
    'checked against the default total',
  )
  t.equal(
    configError([], { ...withIssuer, RELAY_MAX_BACKLOG: '1.5MiB' }),
    'invalid value "1.5MiB" for RELAY_MAX_BACKLOG: invalid byte size "1.5MiB"',
  )
})

t.test('public base url', async (t) => {
  const parse = (text: string): string => parseConfig(['--public-base-url', text], withIssuer).publicBaseUrl
  t.equal(parse('ws://localhost:8080'), 'ws://localhost:8080')
  t.equal(parse('WSS://relay.example.com/'), 'WSS://relay.example.com')
  t.equal(parse('wss://relay.example.com/base/'), 'wss://relay.example.com/base')
  t.equal(parse('wss://relay.example.com/base//'), 'wss://relay.example.com/base/', 'only one slash is stripped')
  for (const bad of [
    'https://relay.example.com',
    'http://relay.example.com',
    'relay.example.com',
    'wss://',
    'wss:relay.example.com',
  ]) {
    t.equal(
      configError(['--public-base-url', bad]),
      `invalid value ${JSON.stringify(bad)} for --public-base-url: expected an absolute ws:// or wss:// URL`,
      bad,
    )
  }
  t.equal(
    configError(['--public-base-url', 'wss://relay.example.com/?a=1']),
    'invalid value "wss://relay.example.com/?a=1" for --public-base-url: must not have a query or fragment',
  )
  t.match(configError(['--public-base-url', 'wss://relay.example.com/#x']), /must not have a query or fragment/)
})

t.test('allowed origins are checked at start', async (t) => {
  t.match(
    configError(['--allowed-origins', 'example.com,https://other.example.com']),
    /^invalid value "example.com,https:\/\/other.example.com" for --allowed-origins: invalid origin pattern "https:\/\/other.example.com"/,
  )
  t.match(
    configError([], { ...withIssuer, RELAY_ALLOWED_ORIGINS: '*' }),
    /^invalid value "\*" for RELAY_ALLOWED_ORIGINS: invalid origin pattern "\*"/,
  )
  t.strictSame(parseConfig(['--allowed-origins', ' , '], withIssuer).allowedOrigins, [])
})

t.test('log level', async (t) => {
  for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']) {
    t.equal(parseConfig(['--log-level', level], withIssuer).logLevel, level)
  }
  t.equal(parseConfig([], { ...withIssuer, RELAY_LOG_LEVEL: 'DEBUG' }).logLevel, 'debug', 'lower-cased for pino')
  t.equal(
    configError(['--log-level', 'verbose']),
    'invalid value "verbose" for --log-level: expected one of fatal, error, warn, info, debug, trace, silent',
  )
  t.match(configError(['--log-level', 'warning']), /for --log-level/)
})

t.test('argument errors', async (t) => {
  t.equal(configError(['--nope']), 'unknown flag --nope')
  t.equal(configError(['--nope=1']), 'unknown flag --nope')
  t.equal(configError(['--help']), 'unknown flag --help')
  t.equal(configError(['--ADDR', ':1']), 'unknown flag --ADDR', 'flags are case-sensitive')
  t.equal(configError(['--addr']), 'missing value for --addr')
  t.equal(configError(['--session-ttl', '--no-auth']), 'missing value for --session-ttl')
  t.equal(configError(['serve']), 'unexpected argument "serve"')
  t.equal(configError(['--addr', ':1', 'extra']), 'unexpected argument "extra"')
  t.equal(configError(['-h']), 'unexpected argument "-h"')
  t.equal(configError(['--']), 'unexpected argument "--"')
  t.equal(configError(['']), 'unexpected argument ""')
  t.equal(parseConfig(['--oidc-audience='], withIssuer).oidcAudience, '', 'an explicitly empty value is allowed')
  t.equal(parseConfig(['--oidc-audience', 'a=b'], withIssuer).oidcAudience, 'a=b')
  t.equal(parseConfig(['--oidc-audience=a=b'], withIssuer).oidcAudience, 'a=b', 'only the first = splits')
})

t.test('errors are ConfigErrors', async (t) => {
  t.throws(() => parseConfig(['--nope'], {}), ConfigError)
  try {
    parseConfig([], {})
    t.fail('expected an error')
  } catch (err) {
    t.type(err, ConfigError)
    t.type(err, Error)
    t.equal((err as ConfigError).code, 'ERR_CONFIG')
    t.equal((err as ConfigError).name, 'ConfigError')
    t.notMatch((err as ConfigError).message, /\n/, 'one line')
  }
})

t.test('settings table', async (t) => {
  const keys = settings.map((row) => row.key)
  const fields = Object.keys(parseConfig(['--no-auth'], {}))
  t.strictSame([...keys].sort(), [...fields].sort(), 'one row per config field')
  t.equal(new Set(keys).size, settings.length, 'keys unique')
  t.equal(new Set(settings.map((row) => row.flag)).size, settings.length, 'flags unique')
  t.equal(new Set(settings.map((row) => row.env)).size, settings.length, 'env names unique')
  for (const row of settings) {
    t.match(row.flag, /^--[a-z]+(?:-[a-z]+)*$/, row.flag)
    t.match(row.env, /^RELAY_[A-Z]+(?:_[A-Z]+)*$/, row.env)
    t.ok(row.help.length > 0, `${row.flag} has help`)
  }
  const text = relayUsage()
  for (const row of settings) t.ok(text.includes(`${row.flag}, ${row.env}`), `usage lists ${row.flag}`)
  t.ok(text.includes('(default 1h)'), 'usage shows defaults')
})

t.test('with --no-auth: loopback by default, another address refused unless said so by name', async (t) => {
  t.same(parseConfig(['--no-auth'], {}).addr, { host: '127.0.0.1', port: 8080 })
  t.same(parseConfig(['--no-auth', '--addr', 'localhost:0'], {}).addr, { host: 'localhost', port: 0 })
  t.match(
    configError(['--no-auth', '--addr', ':8080']),
    /^--no-auth with a listen address that is not loopback \(:8080 \(every interface\)\) would hand the API to anyone/,
  )
  t.same(parseConfig(['--no-auth', '--dev-insecure-listen-anywhere'], { RELAY_ADDR: '0.0.0.0:1' }).addr, {
    host: '0.0.0.0',
    port: 1,
  })
})
