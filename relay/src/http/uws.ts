import { createRequire } from 'node:module'
import type * as Uws from 'uWebSockets.js'
import { NativeUwsMissingError } from '../errors.js'

export type {
  HttpRequest,
  HttpResponse,
  TemplatedApp,
  us_listen_socket,
  us_socket_context_t,
  WebSocket,
  WebSocketBehavior,
} from 'uWebSockets.js'

// The mirror we depend on falls back to a pure-JavaScript server when its native binary
// does not match the Node ABI. That fallback is many times slower and cannot serve our
// parameterised WebSocket route, so running on it would be a silent failure: refuse.
export function loadUws(): typeof Uws {
  const require = createRequire(import.meta.url)
  if (isTruthy(process.env.UWS_USE_FALLBACK)) {
    throw new NativeUwsMissingError('UWS_USE_FALLBACK is set: the relay only runs on the native uWebSockets.js binary')
  }
  const uws = require('uWebSockets.js') as typeof Uws
  // Only the native addon exports SSLApp and getParts; the JavaScript fallback does not.
  if (typeof uws.SSLApp !== 'function' || typeof uws.getParts !== 'function') {
    throw new NativeUwsMissingError(
      `uWebSockets.js native binary did not load for Node ${process.version} (ABI ${process.versions.modules}, ${process.platform}-${process.arch}); ` +
      'the relay refuses to run on the slow JavaScript fallback',
    )
  }
  return uws
}

function isTruthy (value: string | undefined): boolean {
  return value !== undefined && /^(1|true)$/i.test(value)
}
