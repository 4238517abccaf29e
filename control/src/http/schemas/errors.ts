// The one error body every refusal has, and its meaning per status in the OpenAPI document.
import { Type } from 'typebox'

export const ErrorBody = Type.Object(
  { error: Type.String({ description: 'the reason, in words' }) },
  { additionalProperties: false },
)

const ERROR_MEANINGS: Record<number, string> = {
  400: 'invalid input: a schema or rule failed, or the JSON does not parse',
  401: 'missing or invalid bearer token',
  403: 'not allowed: the token lacks the required (or tenant) claim, the application belongs to a tenant the caller is not in, or the caller is read-only and this is a write',
  404: 'no such application, function or build (for invoke and logs: nothing deployed or running)',
  409: 'the name (or route) is taken; for deploy: no successful build yet',
  413: 'body or archive too large',
  415: 'unsupported content type',
  429: "the tenant's builds running and queued are at the limit; Retry-After says when to ask again",
  500: 'internal error (details only in the log, under the x-request-id)',
  501: 'not implemented for this runtime',
  503: 'a dependency is missing or down: identity provider, cluster or metrics',
}

/** Response schemas for the given refusals, all `{error}`. */
export function errors(...statuses: number[]): Record<number, typeof ErrorBody> {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      Type.Object(ErrorBody.properties, {
        additionalProperties: false,
        description: ERROR_MEANINGS[status] ?? 'refused',
      }),
    ]),
  )
}
