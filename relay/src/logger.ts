import pino from 'pino'
import type { Logger } from 'pino'

export type { Logger }

// Tokens never reach a log call by design; the redaction is a second line of defence
// against a future log line that passes a request's headers along.
const redact = {
  paths: [
    'authorization',
    '*.authorization',
    'headers.authorization',
    'token',
    '*.token',
    '*.initiator_token',
    '*.responder_token',
  ],
  censor: '[redacted]',
}

/** Log lines wait at most this long in the buffer before they are written. */
const FLUSH_EVERY_MS = 500

export function createLogger(level: string, destination: pino.DestinationStream = bufferedStdout()): Logger {
  return pino({ level, base: { service: 'relay' }, redact, timestamp: pino.stdTimeFunctions.isoTime }, destination)
}

/**
 * Standard output, written in batches off the main thread. A synchronous write per session
 * event cost about a quarter of the admin API's throughput; batches of up to 4 KiB, flushed
 * every half second and synchronously when the process exits, keep every line.
 */
function bufferedStdout(): pino.DestinationStream {
  const stream = pino.destination({ dest: 1, sync: false, minLength: 4096 })
  setInterval(() => stream.flush(), FLUSH_EVERY_MS).unref()
  process.on('exit', () => stream.flushSync())
  return stream
}
