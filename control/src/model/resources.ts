// The API's request and response shapes, as TypeBox schemas: Fastify validates requests and
// serialises responses with them, and the OpenAPI document is generated from them. A leaf
// schema's `description` doubles as the explanation in a 400 answer (see validation.ts).
import { Type } from 'typebox'
import type { Static, TSchema, TUnsafe } from 'typebox'

export const LANGUAGES = ['go', 'js', 'ts', 'rust'] as const
export const RUNTIMES = ['wasmkube'] as const
export const BUILD_STATUSES = ['pending', 'running', 'succeeded', 'failed'] as const

export const MAX_DESCRIPTION_LENGTH = 1000
export const MAX_ROUTE_LENGTH = 256

// RFC 1035 labels rather than RFC 1123: the deployment names a Kubernetes Service after the
// application, and Service names must start with a letter.
export const NAME_PATTERN = '^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$'

// A route segment: URL path characters (RFC 3986 pchar, percent-escapes complete), but never
// `.`, `..` or the wildcard `...` on its own, also percent-encoded (a URL parser resolves
// `%2e%2e` as `..`), and no escaped `/` or `\` (the API server decodes them into separators).
// A route is `/`, `/...`, or segments after `/`, optionally ending in `/...` (this path and
// everything below it), as Spin writes them.
const DOT = '(?:\\.|%2[eE])'
const SEGMENT = `(?!${DOT}{1,3}(?:/|$))(?:[-A-Za-z0-9._~!$&'()*+,;=:@]|%(?!2[fF]|5[cC])[0-9A-Fa-f]{2})+`
export const ROUTE_PATTERN = `^/(?:${SEGMENT}(?:/${SEGMENT})*(?:/\\.\\.\\.)?|\\.\\.\\.)?$`

const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 timestamp in UTC' })
const Id = Type.String({ description: 'a UUID' })

export const Name = Type.String({
  pattern: NAME_PATTERN,
  description: 'a DNS label (RFC 1035): 1 to 63 lowercase letters, digits and "-", starting with a letter and ending with a letter or digit',
})
export const Language = Type.Enum([...LANGUAGES], { description: 'one of go, js, ts, rust' })
export const Runtime = Type.Enum([...RUNTIMES], { description: 'wasmkube (the only runtime)' })
export const Description = Type.String({ maxLength: MAX_DESCRIPTION_LENGTH, description: `free text of at most ${MAX_DESCRIPTION_LENGTH} characters` })
export const Route = Type.String({
  pattern: ROUTE_PATTERN,
  maxLength: MAX_ROUTE_LENGTH,
  description: `a path starting with "/" of at most ${MAX_ROUTE_LENGTH} characters, optionally ending in "/..." to take everything below it ("/..." alone takes every path); ` +
    'its segments are URL path characters, none empty, ".", ".." or "..." (also percent-encoded), no escaped "/" or "\\"',
})

export const ErrorBody = Type.Object({ error: Type.String({ description: 'the reason, in words' }) }, { additionalProperties: false })

// ---- applications ----

export const ApplicationSummary = Type.Object({
  id: Id,
  name: Name,
  language: Language,
  runtime: Runtime,
  description: Type.String(),
  createdAt: Timestamp,
})

export const FunctionItem = Type.Object({ id: Id, name: Name, route: Route })

export const FunctionSchema = Type.Object({ id: Id, name: Name, route: Route, createdAt: Timestamp })

export const Build = Type.Object({
  id: Id,
  status: Type.Enum([...BUILD_STATUSES]),
  imageRef: Type.Union([Type.String(), Type.Null()]),
  createdAt: Timestamp,
  finishedAt: Type.Union([Timestamp, Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
})

export const Deployment = Type.Object({
  image: Type.String(),
  replicas: Type.Integer(),
  observedReplicas: Type.Integer(),
  ready: Type.Boolean(),
  namespace: Type.String(),
  serviceName: Type.String(),
  internalUrl: Type.String(),
  publicUrl: Type.Union([Type.String(), Type.Null()], { description: 'null unless PLATFORM_PUBLIC_BASE_URL is set' }),
  message: Type.String(),
})

export const Application = Type.Object({
  ...ApplicationSummary.properties,
  functions: Type.Array(FunctionItem),
  deployment: Type.Union([Deployment, Type.Null()], { description: 'null until the first successful build' }),
  builds: Type.Array(Build, { description: 'newest first' }),
})

export const CreateApplication = Type.Object({
  name: Name,
  language: Language,
  runtime: Runtime,
  description: Type.Optional(Description),
}, { additionalProperties: false })

// ---- functions ----

export const CreateFunction = Type.Object({
  name: Name,
  route: Type.Optional(Route),
}, { additionalProperties: false })

export const UpdateFunction = Type.Object({ route: Route }, { additionalProperties: false })

// ---- source ----

/**
 * An object whose every value matches `value`. Not Type.Record: its key pattern `^.*$` does not
 * match keys with a line break, and a value under such a key would go unchecked.
 */
function mapOf<T> (value: TSchema, description: string): TUnsafe<Record<string, T>> {
  return Type.Unsafe<Record<string, T>>({ type: 'object', additionalProperties: value, description })
}

export const Files = mapOf<string>(Type.String(),
  'file path to content; paths are relative ("src/main.go"): no "..", ".", empty or absolute parts, no "\\", control characters or NUL; contents are text without NUL')

export const Source = Type.Object({ files: Files, updatedAt: Timestamp })

export const PutSource = Type.Object({ files: Files }, { additionalProperties: false })

// ---- runtime: invoke and logs ----

export const InvokeRequest = Type.Object({
  method: Type.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$", description: 'an HTTP method token, e.g. GET' }),
  path: Type.String({ pattern: '^/', maxLength: 8192, description: 'path and query, starting with "/"' }),
  headers: Type.Optional(mapOf<string[]>(Type.Array(Type.String()), 'header name to its values')),
  body: Type.Optional(Type.String()),
  bodyIsBase64: Type.Optional(Type.Boolean({ description: 'body is base64 (binary); default false' })),
}, { additionalProperties: false })

export const InvokeResult = Type.Object({
  status: Type.Integer(),
  headers: mapOf<string[]>(Type.Array(Type.String()), 'header name to its values'),
  body: Type.String(),
  bodyIsBase64: Type.Boolean(),
  truncated: Type.Boolean(),
  durationMs: Type.Number(),
})

export const LogsQuery = Type.Object({
  follow: Type.Optional(Type.Boolean({ description: 'keep the connection open and stream new lines; default false' })),
}, { additionalProperties: false })

export const AppLogsQuery = Type.Object({
  follow: Type.Optional(Type.Boolean({ description: 'keep the connection open and stream new lines; default false' })),
  tail: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000, description: 'only the last this many lines; default: every line the pod kept' })),
}, { additionalProperties: false })

// ---- metrics ----

export const MetricsQuery = Type.Object({
  range: Type.Optional(Type.String({ description: 'Go duration from 1m to 24h, e.g. 15m; default 15m' })),
  step: Type.Optional(Type.String({ description: 'Go duration of at least 1s, e.g. 15s; default 15s; at most 11,000 points per series' })),
}, { additionalProperties: false })

const Series = (unit: string): TSchema => Type.Object({
  points: Type.Array(Type.Array(Type.Number(), { minItems: 2, maxItems: 2 }), { description: '[unix seconds, value] pairs' }),
  unit: Type.Literal(unit),
})

const metricsOf = (series: Record<string, TSchema>): TSchema => Type.Object({
  range: Type.String(),
  step: Type.String(),
  series: Type.Object(series),
})

export const ApplicationMetrics = metricsOf({ cpu: Series('cores'), memory: Series('bytes') })
export const FunctionMetrics = metricsOf({ requestRate: Series('req/s'), latencyP95: Series('ms'), errorRate: Series('req/s') })
export const OverviewMetrics = metricsOf({ httpRequestRate: Series('req/s'), buildRate: Series('builds/s') })

export const Accepted = Type.Object({ message: Type.String() })

// ---- params ----

// Ids are any string here: one that is not a UUID simply matches nothing (404), like an unknown one.
export const AppParams = Type.Object({ appId: Type.String() })
export const FunctionParams = Type.Object({ appId: Type.String(), fnId: Type.String() })
export const BuildParams = Type.Object({ appId: Type.String(), buildId: Type.String() })

export type ApplicationSummaryT = Static<typeof ApplicationSummary>
export type ApplicationT = Static<typeof Application>
export type FunctionT = Static<typeof FunctionSchema>
export type BuildT = Static<typeof Build>
export type SourceT = Static<typeof Source>
export type LanguageT = typeof LANGUAGES[number]
export type RuntimeT = typeof RUNTIMES[number]

const ERROR_MEANINGS: Record<number, string> = {
  400: 'invalid input: a schema or rule failed, or the JSON does not parse',
  401: 'missing or invalid bearer token',
  403: 'the token lacks the required claim',
  404: 'no such application, function or build (for invoke and logs: nothing deployed or running)',
  409: 'the name (or route) is taken; for deploy: no successful build yet',
  413: 'body or archive too large',
  415: 'unsupported content type',
  500: 'internal error (details only in the log, under the x-request-id)',
  501: 'not implemented for this runtime',
  503: 'a dependency is missing or down: identity provider, cluster or metrics',
}

/** Response schemas for the given refusals, all `{error}`. */
export function errors (...statuses: number[]): Record<number, typeof ErrorBody> {
  return Object.fromEntries(statuses.map((status) => [status, Type.Object(ErrorBody.properties, {
    additionalProperties: false,
    description: ERROR_MEANINGS[status] ?? 'refused',
  })]))
}
