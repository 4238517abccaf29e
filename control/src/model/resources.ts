// The resources the control plane keeps (applications, functions, sources, builds, deployments)
// and the invoke envelope, as TypeBox schemas: the one vocabulary of every layer. The types
// below are what the store returns and the domain passes around; the same schemas describe
// the API's answers, so Fastify serialises with them and the OpenAPI document shows them. A
// leaf schema's `description` doubles as the explanation in a 400 answer (http/validation.ts).
import { Type } from 'typebox'
import type { Static } from 'typebox'
import { AppSettingsView } from './app-settings.js'
import { mapOf } from './map-of.js'
import { LANGUAGES } from '@session-relay/spin/languages'
import type { Language as LanguageName } from '@session-relay/spin/languages'

const RUNTIMES = ['wasmkube'] as const
const BUILD_STATUSES = ['pending', 'running', 'succeeded', 'failed'] as const

const MAX_DESCRIPTION_LENGTH = 1000
const MAX_ROUTE_LENGTH = 256

// RFC 1035 labels rather than RFC 1123: the deployment names a Kubernetes Service after the
// application, and Service names must start with a letter.
const NAME_PATTERN = '^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$'

// A route segment: URL path characters (RFC 3986 pchar, percent-escapes complete), but never
// `.`, `..` or the wildcard `...` on its own, also percent-encoded (a URL parser resolves
// `%2e%2e` as `..`), and no escaped `/` or `\` (the API server decodes them into separators).
// A route is `/`, `/...`, or segments after `/`, optionally ending in `/...` (this path and
// everything below it), as Spin writes them.
const DOT = '(?:\\.|%2[eE])'
const SEGMENT = `(?!${DOT}{1,3}(?:/|$))(?:[-A-Za-z0-9._~!$&'()*+,;=:@]|%(?!2[fF]|5[cC])[0-9A-Fa-f]{2})+`
const ROUTE_PATTERN = `^/(?:${SEGMENT}(?:/${SEGMENT})*(?:/\\.\\.\\.)?|\\.\\.\\.)?$`

const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 timestamp in UTC' })
const Id = Type.String({ description: 'a UUID' })

export const Name = Type.String({
  pattern: NAME_PATTERN,
  description:
    'a DNS label (RFC 1035): 1 to 63 lowercase letters, digits and "-", starting with a letter and ending with a letter or digit',
})
export const Language = Type.Enum([...LANGUAGES], { description: 'one of go, js, ts, rust' })
export const Runtime = Type.Enum([...RUNTIMES], { description: 'wasmkube (the only runtime)' })
export const Description = Type.String({
  maxLength: MAX_DESCRIPTION_LENGTH,
  description: `free text of at most ${MAX_DESCRIPTION_LENGTH} characters`,
})
export const Tenant = Type.String({
  minLength: 1,
  maxLength: 256,
  description: "a tenant the caller belongs to (a value of the token's tenant claim); default: the caller's only one",
})
export const Route = Type.String({
  pattern: ROUTE_PATTERN,
  maxLength: MAX_ROUTE_LENGTH,
  description:
    `a path starting with "/" of at most ${MAX_ROUTE_LENGTH} characters, optionally ending in "/..." to take everything below it ("/..." alone takes every path); ` +
    'its segments are URL path characters, none empty, ".", ".." or "..." (also percent-encoded), no escaped "/" or "\\"',
})

// ---- applications ----

export const ApplicationSummary = Type.Object({
  id: Id,
  name: Name,
  tenant: Type.String({ description: 'the tenant the application belongs to; names are unique per tenant' }),
  language: Language,
  runtime: Runtime,
  description: Type.String(),
  createdAt: Timestamp,
})

const FunctionItem = Type.Object({ id: Id, name: Name, route: Route })

export const FunctionSchema = Type.Object({ id: Id, name: Name, route: Route, createdAt: Timestamp })

export const Build = Type.Object({
  id: Id,
  status: Type.Enum([...BUILD_STATUSES]),
  imageRef: Type.Union([Type.String(), Type.Null()]),
  imageSizeBytes: Type.Union([Type.Integer(), Type.Null()], {
    description:
      "the image's config and layers in bytes, as pushed; null until known (and when the registry cannot be read)",
  }),
  createdAt: Timestamp,
  finishedAt: Type.Union([Timestamp, Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
})

export const Deployment = Type.Object({
  image: Type.String(),
  imageSizeBytes: Type.Union([Type.Integer(), Type.Null()], { description: "the deployed build's imageSizeBytes" }),
  replicas: Type.Integer(),
  observedReplicas: Type.Integer(),
  ready: Type.Boolean(),
  namespace: Type.String(),
  serviceName: Type.String(),
  internalUrl: Type.String(),
  publicUrl: Type.Union([Type.String(), Type.Null()], { description: 'null unless PLATFORM_PUBLIC_BASE_URL is set' }),
  message: Type.String(),
})

// Kubernetes-style conditions (as a Deployment's or a Knative Service's): stored by the
// reconcile (domain/reconcile.ts), so every replica answers the same.
export const Condition = Type.Object({
  type: Type.Union([Type.Literal('Deployed'), Type.Literal('Ready')], {
    description: 'Deployed: the newest build with the settings now was applied; Ready: it answers',
  }),
  status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
  reason: Type.String({ description: 'one CamelCase word, stable: what a program matches on' }),
  message: Type.String({ description: 'for a person: why, in words' }),
  lastTransitionTime: Type.String({
    format: 'date-time',
    description: 'when the status last changed (not the reason or message)',
  }),
})

// What the API shows: what the runtime reports, and which build it runs. In a cluster with
// variables the image is that build's re-locked with their names, so no build's imageRef is it.
const DeploymentView = Type.Object({
  ...Deployment.properties,
  buildId: Type.Union([Id, Type.Null()], {
    description:
      "the build whose image runs: the one whose imageRef is `image`, else the newest build deployed (its image re-locked with the variables' names, in a cluster); null when not known",
  }),
  conditions: Type.Array(Condition, { description: 'Deployed, then Ready; empty until the first reconcile' }),
})

export const Application = Type.Object({
  ...ApplicationSummary.properties,
  ...AppSettingsView,
  functions: Type.Array(FunctionItem),
  deployment: Type.Union([DeploymentView, Type.Null()], { description: 'null until the first successful build' }),
  builds: Type.Array(Build, { description: 'newest first' }),
})

// ---- source ----

export const Files = mapOf<string>(
  Type.String(),
  'file path to content; paths are relative ("src/main.go"): no "..", ".", empty or absolute parts, no "\\", control characters or NUL; contents are text without NUL',
)

export const Source = Type.Object({ files: Files, updatedAt: Timestamp })

// ---- runtime: invoke and logs ----

export const InvokeRequest = Type.Object(
  {
    method: Type.String({
      pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$",
      description: 'an HTTP method token, e.g. GET',
    }),
    path: Type.String({ pattern: '^/', maxLength: 8192, description: 'path and query, starting with "/"' }),
    headers: Type.Optional(mapOf<string[]>(Type.Array(Type.String()), 'header name to its values')),
    body: Type.Optional(Type.String()),
    bodyIsBase64: Type.Optional(Type.Boolean({ description: 'body is base64 (binary); default false' })),
  },
  { additionalProperties: false },
)

export const InvokeResult = Type.Object({
  status: Type.Integer(),
  headers: mapOf<string[]>(Type.Array(Type.String()), 'header name to its values'),
  body: Type.String(),
  bodyIsBase64: Type.Boolean(),
  truncated: Type.Boolean(),
  durationMs: Type.Number(),
})

export type ApplicationSummaryT = Static<typeof ApplicationSummary>
export type ApplicationT = Static<typeof Application>
export type FunctionT = Static<typeof FunctionSchema>
export type BuildT = Static<typeof Build>
export type DeploymentT = Static<typeof Deployment>
export type ConditionT = Static<typeof Condition>
export type InvokeRequestT = Static<typeof InvokeRequest>
export type InvokeResultT = Static<typeof InvokeResult>
export type SourceT = Static<typeof Source>
export type LanguageT = LanguageName
export type RuntimeT = (typeof RUNTIMES)[number]
