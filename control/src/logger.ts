import pino from 'pino'
import type { Logger } from 'pino'

export type { Logger }

// Fastify's request serialiser leaves headers out, so tokens never reach a log line by design;
// the redaction is a second line of defence against one that passes headers along.
const redact = {
  paths: ['authorization', '*.authorization', 'headers.authorization', '*.headers.authorization', 'token', '*.token'],
  censor: '[redacted]',
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { service: 'control' }, redact, timestamp: pino.stdTimeFunctions.isoTime }, destination)
}
