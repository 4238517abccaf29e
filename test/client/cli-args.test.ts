// Session ids and slot tokens that begin with a dash (one in 64): the relay CLI's commands take
// them for what they are wherever they stand (client/src/cli/args.ts), and nothing else changes.
import fc from 'fast-check'
import t from 'tap'
import { parseCommand, withDashedCredentials } from '../../client/src/cli/args.js'
import { fuzzOptions } from '../helpers/fuzz.js'

const SESSION = { server: { type: 'string' }, json: { type: 'boolean' }, limit: { type: 'string' } } as const
const ATTACH = { server: { type: 'string' }, token: { type: 'string' }, text: { type: 'boolean' } } as const

/** An id or token as the relay makes them: 16 random bytes in base64url. */
const credential = fc
  .uint8Array({ minLength: 16, maxLength: 16 })
  .map((bytes) => Buffer.from(bytes).toString('base64url'))
const dashed = credential.map((id) => `-${id.slice(1)}`)
const anyCredential = fc.oneof(credential, dashed)

t.test('an id is a positional wherever it stands among the options', async () => {
  const flags = fc.subarray([['--json'], ['--server', 'http://r'], ['--limit', '5'], ['--limit=7']])
  fc.assert(
    fc.property(anyCredential, flags, fc.nat(3), (id, chosen, at) => {
      const args = ['get', id]
      args.splice(Math.min(at, args.length), 0, ...chosen.flat())
      const { values, positionals } = parseCommand(args, SESSION)
      const has = (flag: string) => chosen.some((f) => f[0] === flag)
      return (
        positionals.length === 2 &&
        positionals[0] === 'get' &&
        positionals[1] === id &&
        (values.json === true) === has('--json') &&
        values.server === (has('--server') ? 'http://r' : undefined) &&
        values.limit === (has('--limit=7') ? '7' : has('--limit') ? '5' : undefined)
      )
    }),
    fuzzOptions(50),
  )
})

t.test("a token is its option's value, and the URL stays the positional", async () => {
  fc.assert(
    fc.property(anyCredential, anyCredential, fc.boolean(), (token, id, tokenFirst) => {
      const url = `ws://127.0.0.1:1/relay/${id}`
      const args = tokenFirst ? ['--token', token, url, '--text'] : [url, '--text', '--token', token]
      const { values, positionals } = parseCommand(args, ATTACH)
      return values.token === token && values.text === true && positionals.length === 1 && positionals[0] === url
    }),
    fuzzOptions(50),
  )
})

t.test('positionals keep their order when a dashed one moves them past a --', async (t) => {
  const id = '-Hq2_x9-aZ0bY1cX2dW3eV'
  t.same(withDashedCredentials(['get', id, '--json', 'extra'], SESSION), ['get', '--json', '--', id, 'extra'])
  t.same(parseCommand(['get', id, '--json', 'extra'], SESSION).positionals, ['get', id, 'extra'])
  t.same(withDashedCredentials(['--limit', id], SESSION), [`--limit=${id}`])
})

t.test('what is not an id or token is left to parseArgs as before', async (t) => {
  fc.assert(
    fc.property(fc.array(fc.string({ maxLength: 30 }), { maxLength: 6 }), (args) => {
      const credentialShaped = args.some((arg) => /^-[A-Za-z0-9_-]{21}$/.test(arg))
      return credentialShaped || JSON.stringify(withDashedCredentials(args, SESSION)) === JSON.stringify(args)
    }),
    fuzzOptions(50),
  )
  t.throws(() => parseCommand(['get', '--bogus'], SESSION), /Unknown option '--bogus'/)
  t.throws(() => parseCommand(['--token', '-short'], ATTACH), /ambiguous/)
  t.throws(() => parseCommand(['-Hq2_x9-aZ0bY1cX2dW3e'], SESSION), /Unknown option/, '21 characters: not an id')
  const explicit = ['get', '--', '-Hq2_x9-aZ0bY1cX2dW3eV']
  t.same(withDashedCredentials(explicit, SESSION), explicit, "the caller's own -- is kept as it is")
})
