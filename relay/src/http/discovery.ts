import type { Authenticator } from '../auth.js'
import { SCOPES } from '../auth.js'
import { corsHeaders } from './cors.js'
import { HttpError } from '../errors.js'
import { send, sendError, sendJson, trackAbort } from './responses.js'
import type { OriginPolicy } from './origins.js'
import type { HttpRequest, HttpResponse } from './uws.js'

export type DiscoveryDeps = {
  /** null when auth is disabled. */
  auth: Authenticator | null
  issuer: string
  audience: string
  clientId: string
  allowsOrigin: OriginPolicy
}

const AUTH_DISABLED_TEXT =
  'auth is disabled on this deployment: the admin API needs no token and there is no identity provider to discover\n'

/** GET /.well-known/relay-config: what a client needs to log in against the identity provider. */
export function discoveryHandler(deps: DiscoveryDeps) {
  return (res: HttpResponse, req: HttpRequest): void => {
    const cors = corsHeaders(deps.allowsOrigin, req.getHeader('origin'), req.getHeader('host')) ?? {}
    const auth = deps.auth
    if (auth === null)
      return send(res, 404, AUTH_DISABLED_TEXT, { ...cors, 'content-type': 'text/plain; charset=utf-8' })
    trackAbort(res)
    auth.metadata().then(
      (meta) => {
        sendJson(
          res,
          200,
          {
            issuer: deps.issuer,
            audience: deps.audience,
            scopes: [...SCOPES],
            authorization_endpoint: meta.authorization_endpoint,
            token_endpoint: meta.token_endpoint,
            device_authorization_endpoint: meta.device_authorization_endpoint,
            client_id_hint: deps.clientId,
          },
          { ...cors, 'cache-control': 'public, max-age=300' },
        )
      },
      (error: unknown) => {
        sendError(res, error instanceof HttpError ? error : new HttpError(503, 'identity provider unavailable'), cors)
      },
    )
  }
}
