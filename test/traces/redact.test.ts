// Span attributes on their way out (control/src/tracing/redact.ts): whatever a URL attribute
// holds, nothing after its `?` or `#` is exported, url.query never is, and other attributes pass
// unchanged.
import fc from 'fast-check'
import t from 'tap'
import { redactAttributes } from '@session-relay/control/tracing/redact'
import { fuzzOptions } from '../helpers/fuzz.js'

const URL_KEYS = ['http.url', 'http.target', 'url.full', 'url.path', 'http.route']

t.test('no URL attribute keeps a query or fragment; others are untouched', async (t) => {
  fc.assert(
    fc.property(
      fc.constantFrom(...URL_KEYS),
      fc.string(),
      fc.string(),
      fc.string(),
      fc.constantFrom('?', '#'),
      (key, path, query, other, mark) => {
        const before = { [key]: `${path}${mark}${query}`, 'url.query': query, 'other.value': other, count: 3 }
        const after = redactAttributes(before)
        const kept = after[key]
        if (typeof kept !== 'string' || kept.includes('?') || kept.includes('#')) return false
        if (!path.startsWith(kept)) return false
        return !('url.query' in after) && after['other.value'] === other && after.count === 3
      },
    ),
    fuzzOptions(),
  )
  const clean = { 'url.path': '/api/v1/applications', 'http.request.method': 'GET' }
  t.equal(redactAttributes(clean), clean, 'nothing to cut: the same object, no copy')
})
