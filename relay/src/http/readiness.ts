// Readiness: whether this relay takes new sessions. A drain (SIGTERM) turns it off for good,
// so that the Service sends admin requests for new sessions to other pods while this one
// keeps serving the sessions it holds.
import type { HttpResponse } from './uws.js'
import { send } from './responses.js'

export type Readiness = { draining: boolean }

/** What a create refused by a drain tells the client to wait: about one readiness probe, after which the Service no longer routes here. */
export const DRAINING_RETRY_AFTER_SECONDS = 5

const TEXT = { 'content-type': 'text/plain; charset=utf-8' }

/** GET /readyz: 200 `ok`, or 503 `draining` from SIGTERM on. */
export function readyzHandler(readiness: Readiness) {
  return (res: HttpResponse): void => {
    if (readiness.draining) send(res, 503, 'draining', TEXT)
    else send(res, 200, 'ok', TEXT)
  }
}
