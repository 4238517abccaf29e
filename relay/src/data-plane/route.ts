// The WebSocket route, /relay/{id}: the behavior of behavior.ts behind the request guard, a
// count of open sockets for shutdown to wait on, and the answers to plain HTTP on that path.
import { HttpError } from '../errors.js'
import type { Routes } from '../http/request-guard.js'
import { sendError } from '../http/responses.js'
import type { HttpRequest, HttpResponse } from '../http/uws.js'
import type { PeerData } from '../session/session.js'
import type { DataPlaneDeps } from './deps.js'
import { dataPlaneBehavior } from './behavior.js'

export type DataPlaneRoute = {
  /** WebSocket connections uWS has opened and not yet reported closed. */
  openSockets(): number
}

export function registerDataPlaneRoute(routes: Routes, deps: DataPlaneDeps): DataPlaneRoute {
  let openSockets = 0
  const behavior = dataPlaneBehavior(deps)
  const { open, close } = behavior
  routes.ws<PeerData>('/relay/:id', {
    ...behavior,
    open(ws) {
      openSockets++
      void open?.(ws)
    },
    close(ws, code, message) {
      openSockets--
      close?.(ws, code, message)
    },
  })
  routes.any('/relay/:id', (res: HttpResponse, req: HttpRequest) => {
    // uWS passes upgrades without a Sec-WebSocket-Key here rather than to the ws route.
    if (req.getHeader('upgrade') !== '') {
      deps.metrics.attachRefused.bad_request++
      return sendError(res, new HttpError(400, 'invalid websocket upgrade request'))
    }
    sendError(res, new HttpError(426, 'websocket upgrade required', { upgrade: 'websocket', connection: 'Upgrade' }))
  })
  return { openSockets: () => openSockets }
}
