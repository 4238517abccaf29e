// The sandbox's two outbound rules on their own: Spin's allowed_outbound_hosts syntax and
// matching, and the addresses a function may never reach, whatever spelling an address takes.
import fc from 'fast-check'
import t from 'tap'
import { addressPolicy, parseRanges } from '@session-relay/host/sandbox/addresses'
import { AllowedHostError, allowedHosts, parseAllowedHost } from '@session-relay/host/sandbox/allowed-hosts'

const runs = { numRuns: Number(process.env.FUZZ_RUNS ?? 200) }

t.test('allowed_outbound_hosts entries match as Spin reads them', async (t) => {
  const allows = allowedHosts([
    'https://api.example.com',
    'http://*.internal.example:8080',
    '*://cache.example:6379',
    'http://10.1.0.0/16:*',
    'https://db.example:5000..5002',
  ])
  const cases: Array<[string, number, string, boolean]> = [
    ['https', 443, 'api.example.com', true],
    ['https', 443, 'API.Example.com.', true],
    ['http', 80, 'api.example.com', false],
    ['https', 8443, 'api.example.com', false],
    ['http', 8080, 'a.internal.example', true],
    ['http', 8080, 'internal.example', false],
    ['redis', 6379, 'cache.example', true],
    ['http', 6379, 'cache.example', true],
    ['http', 1234, '10.1.200.3', true],
    ['http', 1234, '10.2.0.1', false],
    ['https', 5001, 'db.example', true],
    ['https', 5002, 'db.example', false],
  ]
  for (const [scheme, port, host, expected] of cases) t.equal(allows({ scheme, port, host }), expected, `${scheme}://${host}:${port}`)
  t.equal(allowedHosts([])({ scheme: 'https', host: 'example.com', port: 443 }), false, 'nothing listed, nothing allowed')
  t.equal(allowedHosts(['*://*:*'])({ scheme: 'http', host: 'anything', port: 1 }), true, 'everything, when the lock says so')
})

t.test('entries this runtime cannot honour are refused by name, never read as more', async (t) => {
  for (const [entry, reason] of [
    ['example.com', /expected scheme:\/\/host\[:port\]/],
    ['https://example.com/path', /no path/],
    ['*://example.com', /a port is required when the scheme is \*/],
    ['https://{{ host }}', /templated entries are not supported/],
    ['http://self', /service chaining is not supported/],
    ['http://x.spin.internal', /service chaining/],
    ['https://exa mple.com', /is not a host name/],
    ['https://example.com:99999', /is not a number from 0 to 65535/],
    ['https://example.com:9..3', /empty or out of bounds/],
    ['http://10.0.0.0/40', /is not a CIDR range/],
    ['unknown://example.com', /no default port for unknown/],
  ] as const) {
    t.throws(() => parseAllowedHost(entry), reason, entry)
  }
})

t.test('any text is either an entry or an AllowedHostError', async (t) => {
  fc.assert(fc.property(fc.oneof(fc.string(), fc.webUrl(), fc.constantFrom('*://*:*', 'http://[::1]:80', 'https://*.a.b')), (entry) => {
    try {
      const allows = allowedHosts([entry])
      return typeof allows({ scheme: 'https', host: 'a.b', port: 443 }) === 'boolean'
    } catch (error) {
      return error instanceof AllowedHostError
    }
  }), runs)
  t.pass('no other outcome')
})

// An independent statement of the IPv4 ranges that must be refused.
const REFUSED_V4: Array<[number, number]> = [
  [0x00000000, 8], [0x0a000000, 8], [0x64400000, 10], [0x7f000000, 8], [0xa9fe0000, 16], [0xac100000, 12],
  [0xc0000000, 24], [0xc0000200, 24], [0xc0586300, 24], [0xc0a80000, 16], [0xc6120000, 15], [0xc6336400, 24],
  [0xcb007100, 24], [0xe0000000, 4], [0xf0000000, 4],
]
const inRefusedRange = (value: number): boolean => REFUSED_V4.some(([base, bits]) => (value >>> (32 - bits)) === (base >>> (32 - bits)))
const dotted = (value: number): string => [24, 16, 8, 0].map((shift) => (value >>> shift) & 255).join('.')

t.test('an IPv4 address is refused exactly when it is in a special range, in every IPv6 spelling too', async (t) => {
  const policy = addressPolicy([])
  fc.assert(fc.property(fc.integer({ min: 0, max: 0xffffffff }), (value) => {
    const address = dotted(value)
    const expected = inRefusedRange(value)
    const hex = `${((value >>> 16) & 0xffff).toString(16)}:${(value & 0xffff).toString(16)}`
    return policy.refused(address) === expected &&
      policy.refused(`::ffff:${address}`) === expected &&
      policy.refused(`::FFFF:${hex}`) === expected &&
      policy.refused(`0:0:0:0:0:ffff:${address}`) === expected
  }), runs)
  t.equal(policy.refused('93.184.216.34'), false)
  t.equal(policy.refused('169.254.169.254'), true, 'cloud metadata')
})

t.test('IPv6 special ranges are refused; an operator range lifts exactly itself', async (t) => {
  const policy = addressPolicy([])
  for (const address of ['::1', '::', 'fe80::1', 'fd00::1', 'fc12::3', 'ff02::1', '64:ff9b::7f00:1', '2001:db8::1', '2002:7f00:1::1', '::127.0.0.1']) {
    t.equal(policy.refused(address), true, address)
  }
  t.equal(policy.refused('2606:4700::1111'), false, 'a public IPv6 address')
  t.equal(policy.refused('not an address'), true, 'not an address is nothing to reach')
  const open = addressPolicy(parseRanges('127.0.0.0/8, fd00::/8'))
  t.equal(open.refused('127.0.0.5'), false)
  t.equal(open.refused('::ffff:127.0.0.5'), false, 'the mapped form too')
  t.equal(open.refused('fd00::9'), false)
  t.equal(open.refused('10.0.0.1'), true, 'other ranges stay refused')
  t.throws(() => parseRanges('127.0.0.1'), /"127.0.0.1" is not a CIDR range/)
  t.throws(() => parseRanges('10.0.0.0/33'), /is not a CIDR range/)
  t.throws(() => parseRanges('10.0.0.0/8/9'), /is not a CIDR range/, 'one slash only')
  t.same(parseRanges(''), [])
})
