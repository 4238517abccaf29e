// What leaves the process in a span's attributes never carries a query string: a token or a
// signature is often in one (a log stream's `access_token`, a presigned URL), and the path is
// what a trace needs. Applied to every span at export, whichever instrumentation set it.
import type { Attributes, AttributeValue } from '@opentelemetry/api'

// The attributes that hold a URL, a path or a query in the HTTP semantic conventions, old and new.
const URL_KEYS = new Set(['http.url', 'http.target', 'url.full', 'url.path', 'http.route'])
const DROPPED_KEYS = new Set(['url.query'])

function withoutQuery(value: AttributeValue | undefined): AttributeValue | undefined {
  if (typeof value !== 'string') return value
  const cut = value.search(/[?#]/)
  return cut === -1 ? value : value.slice(0, cut)
}

/** The attributes with every query string cut off, or the same object when none had one. */
export function redactAttributes(attributes: Attributes): Attributes {
  let copy: Attributes | undefined
  for (const [key, value] of Object.entries(attributes)) {
    if (DROPPED_KEYS.has(key) || (URL_KEYS.has(key) && withoutQuery(value) !== value)) {
      copy ??= { ...attributes }
      if (DROPPED_KEYS.has(key)) delete copy[key]
      else copy[key] = withoutQuery(value)
    }
  }
  return copy ?? attributes
}
