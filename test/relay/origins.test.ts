import t from 'tap'
import { compileOriginPolicy } from '@session-relay/relay/http/origins'

const relayHost = 'relay.example.net'

type Assert = Pick<typeof t, 'ok' | 'notOk'>

// Checks each origin against the policy with a Host header that never
// matches, so only the patterns decide.
function check(t: Assert, patterns: string[], allowed: string[], refused: string[]): void {
  const allows = compileOriginPolicy(patterns, 'https')
  for (const origin of allowed) t.ok(allows(origin, relayHost), `${patterns.join(',')} allows ${origin}`)
  for (const origin of refused) t.notOk(allows(origin, relayHost), `${patterns.join(',')} refuses ${origin}`)
}

t.test('exact host matches only the default port', async (t) => {
  check(
    t,
    ['example.com'],
    [
      'https://example.com',
      'http://example.com',
      'https://example.com:443',
      'http://example.com:80',
      'wss://example.com',
      'ws://example.com:80',
    ],
    [
      'https://example.com:8443',
      'http://example.com:443',
      'https://example.com:80',
      'https://www.example.com',
      'https://example.org',
      'https://example.co',
      'https://xexample.com',
    ],
  )
})

t.test('explicit port', async (t) => {
  check(
    t,
    ['example.com:8443'],
    ['https://example.com:8443', 'http://example.com:8443'],
    [
      'https://example.com',
      'https://example.com:443',
      'https://example.com:84430',
      'https://example.com:844',
      'https://sub.example.com:8443',
    ],
  )
  check(
    t,
    ['example.com:443'],
    ['https://example.com', 'https://example.com:443', 'http://example.com:443'],
    ['http://example.com'],
  )
})

t.test('any port', async (t) => {
  check(
    t,
    ['localhost:*'],
    ['http://localhost', 'http://localhost:3000', 'https://localhost:1', 'http://localhost:65535'],
    ['http://sub.localhost:3000', 'http://localhost.example.com:3000', 'http://localhost:65536'],
  )
})

t.test('wildcard subdomain', async (t) => {
  check(
    t,
    ['*.example.com'],
    ['https://a.example.com', 'https://a.b.c.example.com', 'http://www.example.com:80'],
    [
      'https://example.com',
      'https://evil-example.com',
      'https://evilexample.com',
      'https://a.evil-example.com',
      'https://example.com.evil.com',
      'https://a.example.com.evil.com',
      'https://.example.com',
      'https://a.example.com:8443',
      'https://a.example.co',
    ],
  )
  check(
    t,
    ['*.example.com:*'],
    ['https://a.example.com:8443', 'https://b.a.example.com'],
    ['https://example.com:8443', 'https://evil-example.com:8443'],
  )
  check(
    t,
    ['*.example.com:8443'],
    ['https://a.example.com:8443'],
    ['https://a.example.com', 'https://a.example.com:9443'],
  )
})

t.test('several patterns', async (t) => {
  check(
    t,
    ['example.com', '*.example.org:*', 'localhost:3000'],
    ['https://example.com', 'https://a.example.org:1234', 'http://localhost:3000'],
    ['https://a.example.com', 'https://example.org', 'http://localhost:3001'],
  )
})

t.test('case-insensitive', async (t) => {
  check(
    t,
    ['Example.COM', '*.Example.ORG:*'],
    ['https://EXAMPLE.com', 'HTTPS://example.COM', 'https://A.EXAMPLE.org:99'],
    ['https://EVIL-example.com'],
  )
})

t.test('userinfo never matches', async (t) => {
  check(
    t,
    ['example.com', '*.example.com'],
    [],
    [
      'https://example.com@evil.com',
      'https://user@example.com',
      'https://user:pass@example.com',
      'https://evil.com@example.com',
      'https://@example.com',
      'https://a.example.com@evil.com',
    ],
  )
})

t.test('only serialised origins match', async (t) => {
  check(
    t,
    ['example.com', 'example.com:*'],
    [],
    [
      'null',
      '',
      'example.com',
      '//example.com',
      'https:example.com',
      'https:/example.com',
      'https:///example.com',
      'ftp://example.com',
      'file://example.com',
      'javascript://example.com',
      'https://example.com/',
      'https://example.com/path',
      'https://example.com?x=1',
      'https://example.com#x',
      'https://example.com:443/',
      'https://example.com:',
      'https://example.com:-1',
      'https://example.com:+443',
      'https://example.com:0443',
      'https://example.com:99999',
      'https://example.com:443:443',
      'https://example.com.',
      'https://example..com',
      'https://ex ample.com',
      ' https://example.com',
      'https://example.com ',
      'https://example.com\n',
      'https://example.com\\',
      'https://example.com%2f',
      'https://[example.com]',
      '__proto__://example.com',
      'constructor://example.com',
      'https://example.com, https://example.com',
    ],
  )
})

t.test('odd ports', async (t) => {
  check(t, ['example.com:0'], ['https://example.com:0'], ['https://example.com'])
  check(t, ['example.com:65535'], ['https://example.com:65535'], ['https://example.com:5535'])
  check(t, ['example.com:80'], ['http://example.com', 'https://example.com:80'], ['https://example.com'])
})

t.test('IPv6 and IPv4 literals', async (t) => {
  check(
    t,
    ['[::1]:*'],
    ['http://[::1]', 'http://[::1]:3000', 'http://[0:0:0:0:0:0:0:1]:3000'],
    ['http://[::2]:3000', 'http://::1:3000', 'http://[::1', 'http://[::1]3000', 'http://[fe80::1%25eth0]:3000'],
  )
  check(
    t,
    ['[2001:DB8::1]'],
    ['https://[2001:db8::1]', 'https://[2001:0db8:0:0:0:0:0:1]:443'],
    ['https://[2001:db8::1]:8443'],
  )
  check(t, ['127.0.0.1:*'], ['http://127.0.0.1:5173'], ['http://127.0.0.2:5173', 'http://[::1]:5173'])
})

t.test('same origin always passes', async (t) => {
  for (const patterns of [[], ['other.example.org']]) {
    const allows = compileOriginPolicy(patterns, 'https')
    const allowsHttp = compileOriginPolicy(patterns, 'http')
    t.ok(allows('https://relay.example.net', 'relay.example.net'))
    t.ok(allows('https://RELAY.example.net', 'relay.EXAMPLE.net'), 'case-insensitive')
    t.ok(allows('https://relay.example.net:443', 'relay.example.net'), 'explicit default port in Origin')
    t.ok(allows('https://relay.example.net', 'relay.example.net:443'), 'explicit default port in Host')
    t.ok(allows('wss://relay.example.net', 'relay.example.net'), 'wss is https')
    t.ok(allowsHttp('http://relay.example.net', 'relay.example.net:80'))
    t.ok(allowsHttp('http://localhost:8080', 'localhost:8080'))
    t.ok(allowsHttp('http://[::1]:8080', '[::1]:8080'))
    t.ok(allowsHttp('http://127.0.0.1:8080', '127.0.0.1:8080'))
    t.ok(allowsHttp('ws://127.0.0.1:8080', '127.0.0.1:8080'), 'ws is http')
    t.notOk(allowsHttp('http://localhost:8081', 'localhost:8080'), 'different port')
    t.notOk(allowsHttp('http://localhost', 'localhost:8080'), 'default port against explicit')
    t.notOk(allows('https://relay.example.net', 'relay.example.net:80'), 'https default is 443')
    t.notOk(allows('https://evil.example.net', 'relay.example.net'))
    t.notOk(allows('https://sub.relay.example.net', 'relay.example.net'))
    t.notOk(allows('https://relay.example.net/', 'relay.example.net'), 'malformed Origin')
    t.notOk(allows('null', 'relay.example.net'))
    t.notOk(allows('', ''), 'absent Origin and Host')
    t.notOk(allows('https://relay.example.net', ''), 'absent Host')
    t.notOk(allows('https://relay.example.net', 'relay.example.net/x'), 'malformed Host')
    t.notOk(allows('https://relay.example.net', 'user@relay.example.net'), 'malformed Host')
  }
})

t.test('same origin needs the scheme the relay serves', async (t) => {
  const https = compileOriginPolicy([], 'https')
  const http = compileOriginPolicy([], 'http')
  // A page on http://host (which anyone on the path can write) is not the https relay's origin.
  t.notOk(https('http://relay.example.net', 'relay.example.net'), 'http page, https relay, default ports')
  t.notOk(
    https('http://relay.example.net:8443', 'relay.example.net:8443'),
    'http page, https relay, same explicit port',
  )
  t.notOk(https('ws://relay.example.net:8443', 'relay.example.net:8443'), 'ws page, https relay')
  t.notOk(http('https://relay.example.net', 'relay.example.net'), 'https page, http relay, default ports')
  t.notOk(http('https://127.0.0.1:8080', '127.0.0.1:8080'), 'https page, http relay, same explicit port')
  t.notOk(http('wss://127.0.0.1:8080', '127.0.0.1:8080'), 'wss page, http relay')
  t.ok(
    compileOriginPolicy(['relay.example.net'], 'http')('https://relay.example.net', 'relay.example.net'),
    'a pattern still allows either scheme: behind a TLS-terminating proxy, list the public host',
  )
})

t.test('empty list allows only same origin', async (t) => {
  check(t, [], [], ['https://example.com', 'http://localhost:3000', 'https://relay.example.net.evil.com'])
})

t.test('malformed patterns are rejected when compiled', async (t) => {
  for (const bad of [
    '',
    ' ',
    '*',
    '*.',
    '*.*.example.com',
    'a.*.example.com',
    'example.*',
    '**.example.com',
    '*example.com',
    'https://example.com',
    'http://example.com:*',
    'example.com/',
    'example.com:',
    'example.com:x',
    'example.com:70000',
    'example.com:-1',
    'user@example.com',
    'example..com',
    '.example.com',
    'example.com.',
    '[::1',
    '[::1]x',
    '[nothost]',
    '*.[::1]',
    '*.0.0.1',
    '*.127.0.0.1:*',
    'example.com:80:80',
    ' example.com',
    'exa mple.com',
  ]) {
    t.throws(
      () => compileOriginPolicy([bad], 'https'),
      { message: new RegExp(`^invalid origin pattern ${escape(JSON.stringify(bad))}: `) },
      JSON.stringify(bad),
    )
  }
  t.throws(() => compileOriginPolicy(['https://example.com'], 'https'), { message: /without a scheme/ })
})

// No stopwatch: at a million labels a matcher that backtracks (quadratic or worse) would take
// hours and the file's timeout fails it, while a linear one answers in milliseconds.
t.test('hostile input: a million labels get their answer', async (t) => {
  const allows = compileOriginPolicy(['*.example.com:*'], 'https')
  t.notOk(allows(`https://${'a.'.repeat(1_000_000)}example.co`, relayHost))
  t.notOk(allows(`https://${'a-'.repeat(1_000_000)}!`, relayHost))
  t.ok(allows(`https://${'a.'.repeat(1_000_000)}example.com`, relayHost))
})

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
