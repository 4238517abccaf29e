// Errors carry a stable `code` so callers branch on it, never on message text. Refusals that
// become HTTP answers are the common root's (common/src/errors.ts); the classes here are the
// relay's own failures to start.

class RelayError extends Error {
  readonly code: string = 'ERR_RELAY'
  constructor(message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = new.target.name
  }
}

/** A setting that does not parse: the process exits with code 2. Shared with the control plane. */
export { ConfigError } from '@session-relay/common/config/settings'

/** The listen address cannot be bound; the message names the address and the OS's reason. */
export class ListenError extends RelayError {
  override readonly code = 'ERR_LISTEN'
}

/** uWebSockets.js fell back to its JavaScript implementation. */
export class NativeUwsMissingError extends RelayError {
  override readonly code = 'ERR_UWS_NATIVE_MISSING'
}

/** A refusal that maps to an HTTP status and a JSON `{"error": message}` body; the message is safe to show. */
export { HttpError } from '@session-relay/common/errors'
