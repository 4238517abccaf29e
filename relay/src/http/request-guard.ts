import { HttpError } from '../errors.js'
import { statusLine } from './responses.js'
import type { HttpRequest, HttpResponse, TemplatedApp, WebSocketBehavior } from './uws.js'

type Handler = (res: HttpResponse, req: HttpRequest) => void
type Method = 'get' | 'post' | 'del' | 'options' | 'any'

/**
 * Why a request is refused whatever its route, or null. uWebSockets.js 20.30 accepts both:
 * it frames the body by the first of two different Content-Length headers, which a proxy in
 * front may have framed by the other (request smuggling, RFC 9112 §6.3), and it answers 101
 * to a WebSocket handshake whatever protocol `Upgrade` names, so a proxy that lets `h2c`
 * through would hand the client a tunnel it never meant to open.
 */
function refusalOf(req: HttpRequest): HttpError | null {
  let length: string | null = null
  let conflicting = false
  req.forEach((name, value) => {
    if (name !== 'content-length') return
    if (length === null) length = value
    else if (value !== length) conflicting = true
  })
  if (conflicting) return new HttpError(400, 'conflicting content-length headers')
  const upgrade = req.getHeader('upgrade')
  if (upgrade !== '' && upgrade.trim().toLowerCase() !== 'websocket') {
    return new HttpError(400, 'unsupported upgrade: only websocket is accepted')
  }
  return null
}

/** The refusal, then the connection closes: after conflicting lengths, where the next request starts is unknown. */
function refuse(res: HttpResponse, error: HttpError): void {
  res.cork(() => {
    res.writeStatus(statusLine(error.status))
    res.writeHeader('content-type', 'application/json')
    res.end(JSON.stringify({ error: error.message }), true)
  })
}

function guard(handler: Handler): Handler {
  return (res, req) => {
    const refusal = refusalOf(req)
    if (refusal !== null) return refuse(res, refusal)
    handler(res, req)
  }
}

export type Routes = { [M in Method]: (pattern: string, handler: Handler) => void } & {
  ws: <UserData>(pattern: string, behavior: WebSocketBehavior<UserData>) => void
}

/** Route registration on `app` with every HTTP handler and WebSocket upgrade behind refusalOf. */
export function guardedRoutes(app: TemplatedApp): Routes {
  return {
    get: (pattern, handler) => {
      app.get(pattern, guard(handler))
    },
    post: (pattern, handler) => {
      app.post(pattern, guard(handler))
    },
    del: (pattern, handler) => {
      app.del(pattern, guard(handler))
    },
    options: (pattern, handler) => {
      app.options(pattern, guard(handler))
    },
    any: (pattern, handler) => {
      app.any(pattern, guard(handler))
    },
    ws: (pattern, behavior) => {
      const { upgrade } = behavior
      if (upgrade === undefined)
        throw new Error(`the WebSocket route ${pattern} needs an upgrade handler to be guarded`)
      app.ws(pattern, {
        ...behavior,
        upgrade(res, req, context) {
          const refusal = refusalOf(req)
          if (refusal !== null) return refuse(res, refusal)
          void upgrade(res, req, context)
        },
      })
    },
  }
}
