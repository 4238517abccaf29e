import { createRequire } from 'node:module'
import type * as Uws from 'uWebSockets.js'
import { ConfigError, NativeUwsMissingError } from '../errors.js'
import { currentRuntime, describeLoadFailure, readBinary } from './uws-load-failure.js'

export type {
  HttpRequest,
  HttpResponse,
  TemplatedApp,
  us_listen_socket,
  us_socket_context_t,
  WebSocket,
  WebSocketBehavior,
} from 'uWebSockets.js'

let loaded: { uws: typeof Uws; maxHeadersSize: number } | undefined

// uWS reads UWS_HTTP_MAX_HEADERS_SIZE from the environment once, when its binary loads, and
// answers a request head larger than that with its own 431 before any handler runs. The
// relay's --max-headers-size is that variable, set here, just before the one load.
export function loadUws(maxHeadersSize: number): typeof Uws {
  if (loaded !== undefined) {
    if (loaded.maxHeadersSize !== maxHeadersSize) {
      throw new ConfigError(
        `--max-headers-size ${maxHeadersSize}: uWebSockets.js is already loaded in this process with ${loaded.maxHeadersSize}`,
      )
    }
    return loaded.uws
  }
  process.env.UWS_HTTP_MAX_HEADERS_SIZE = String(maxHeadersSize)
  const require = createRequire(import.meta.url)
  let uws: typeof Uws
  try {
    uws = require('uWebSockets.js') as typeof Uws
  } catch (error) {
    // The mirror has no JavaScript fallback: a binary that does not load throws.
    const runtime = currentRuntime()
    throw new NativeUwsMissingError(describeLoadFailure(runtime, readBinary(runtime)), { cause: error })
  }
  loaded = { uws, maxHeadersSize }
  return uws
}
