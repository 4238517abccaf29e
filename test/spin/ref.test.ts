// Artifact references and digests: parsing round-trips every valid reference, refuses the
// malformed, and a digest check refuses any changed byte (fixed seed, bounded runs).
import fc from 'fast-check'
import t from 'tap'
import { credentialsFor, parseChallenge } from '@session-relay/spin/auth'
import { sha256Digest, verifyDigest } from '@session-relay/spin/digest'
import { formatRef, isLoopbackRegistry, parseRef, pinnedRef } from '@session-relay/spin/ref'

const SEED = 1717
const component = fc
  .stringMatching(/^[a-z0-9]+(?:[._-][a-z0-9]+)*$/)
  .filter((text) => text.length > 0 && text.length < 30)
const tag = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,20}$/)
const digest = fc.uint8Array({ minLength: 0, maxLength: 64 }).map((bytes) => sha256Digest(bytes))
const host = fc.oneof(
  fc.constant('localhost:5000'),
  fc.constant('127.0.0.1:39999'),
  fc.constant('registry.example.com'),
  fc.constant('[::1]:5000'),
)

t.test('a registry reference survives format(parse(x)) with its parts intact', async () => {
  fc.assert(
    fc.property(
      host,
      fc.array(component, { minLength: 1, maxLength: 3 }),
      fc.option(tag),
      fc.option(digest),
      (registry, path, tagValue, digestValue) => {
        const text = `${registry}/${path.join('/')}${tagValue === null ? '' : `:${tagValue}`}${digestValue === null ? '' : `@${digestValue}`}`
        const ref = parseRef(text)
        if (ref.kind !== 'registry') return false
        const expectedTag = tagValue ?? (digestValue === null ? 'latest' : null)
        return (
          ref.registry === registry &&
          ref.repository === path.join('/') &&
          ref.tag === expectedTag &&
          ref.digest === digestValue &&
          formatRef(parseRef(formatRef(ref))) === formatRef(ref)
        )
      },
    ),
    { seed: SEED, numRuns: 300 },
  )
})

t.test('an oci-layout reference keeps its absolute directory, tag and digest', async () => {
  fc.assert(
    fc.property(
      fc.array(component, { minLength: 1, maxLength: 4 }),
      fc.option(tag),
      fc.option(digest),
      (parts, tagValue, digestValue) => {
        const dir = `/${parts.join('/')}`
        const ref = parseRef(
          `oci-layout:${dir}${tagValue === null ? '' : `:${tagValue}`}${digestValue === null ? '' : `@${digestValue}`}`,
        )
        return (
          ref.kind === 'oci-layout' &&
          ref.dir === dir &&
          ref.tag === (tagValue ?? (digestValue === null ? 'latest' : null)) &&
          ref.digest === digestValue
        )
      },
    ),
    { seed: SEED, numRuns: 300 },
  )
})

t.test('malformed references are refused with the reason', async (t) => {
  t.throws(() => parseRef('app:1'), /expected host\/repository/)
  t.throws(() => parseRef('library/app:1'), /registry host must be written out/)
  t.throws(() => parseRef('localhost:5000/App'), /invalid repository/)
  t.throws(() => parseRef('localhost:5000/app@sha256:abc'), /invalid digest/)
  t.throws(() => parseRef('oci-layout:relative/dir:v1'), /absolute directory/)
  t.throws(() => parseRef('oci-layout:/a/../b:v1'), /"\.\."/)
  t.throws(() => parseRef(`localhost:5000/${'a'.repeat(2000)}`), /longer than/)
})

t.test('arbitrary text never makes the parser throw anything but an Error with a message', async () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), (text) => {
      try {
        parseRef(text)
      } catch (error) {
        return error instanceof Error && error.message.length > 0
      }
      return true
    }),
    { seed: SEED, numRuns: 500 },
  )
})

t.test('the pinned reference drops the tag for the digest', async (t) => {
  const d = sha256Digest(Buffer.from('x'))
  t.equal(pinnedRef(parseRef('127.0.0.1:5000/apps/demo:b1'), d), `127.0.0.1:5000/apps/demo@${d}`)
  t.equal(pinnedRef(parseRef('oci-layout:/var/store:b1'), d), `oci-layout:/var/store@${d}`)
})

t.test('plain http is allowed by default for loopback registries only', async (t) => {
  t.ok(isLoopbackRegistry('127.0.0.1:5000'))
  t.ok(isLoopbackRegistry('localhost'))
  t.ok(isLoopbackRegistry('[::1]:5000'))
  t.notOk(isLoopbackRegistry('registry.example.com'))
  t.notOk(isLoopbackRegistry('127.0.0.1.example.com:5000'))
})

t.test('a digest check refuses any content but the one hashed', async () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 1, maxLength: 256 }),
      fc.nat(),
      fc.integer({ min: 1, max: 255 }),
      (bytes, index, flip) => {
        const d = sha256Digest(bytes)
        verifyDigest(bytes, d, 'blob')
        const changed = Uint8Array.from(bytes)
        const at = index % changed.length
        changed[at] = (changed[at] as number) ^ flip
        try {
          verifyDigest(changed, d, 'blob')
          return false
        } catch (error) {
          return /does not match its digest/.test((error as Error).message)
        }
      },
    ),
    { seed: SEED, numRuns: 300 },
  )
  t.throws(() => verifyDigest(Buffer.from('x'), 'md5:abc', 'blob'), /not a sha256 digest/)
})

t.test('Docker config.json entries and registry challenges', async (t) => {
  const auth = Buffer.from('user:pa:ss').toString('base64')
  t.same(credentialsFor({ auths: { 'https://127.0.0.1:5000/v2/': { auth } } }, '127.0.0.1:5000'), {
    username: 'user',
    password: 'pa:ss',
  })
  t.same(credentialsFor({ auths: { 'r.example': { username: 'u', password: 'p' } } }, 'r.example'), {
    username: 'u',
    password: 'p',
  })
  t.equal(credentialsFor({ auths: { other: { auth } } }, 'r.example'), null)
  t.equal(credentialsFor(null, 'r.example'), null)
  t.same(
    parseChallenge(
      'Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push"',
    ),
    {
      scheme: 'bearer',
      params: { realm: 'https://auth.example/token', service: 'registry.example', scope: 'repository:a/b:pull,push' },
    },
  )
  t.same(parseChallenge('Basic realm="test-registry"'), { scheme: 'basic', params: { realm: 'test-registry' } })
})
