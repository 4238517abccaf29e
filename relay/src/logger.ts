import pino from 'pino'
import type { Logger } from 'pino'

export type { Logger }

// Tokens never reach a log call by design; the redaction is a second line of defence
// against a future log line that passes a request's headers along.
const redact = {
  paths: ['authorization', '*.authorization', 'headers.authorization', 'token', '*.token', '*.initiator_token', '*.responder_token'],
  censor: '[redacted]',
}

export function createLogger (level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { service: 'relay' }, redact, timestamp: pino.stdTimeFunctions.isoTime }, destination)
}
