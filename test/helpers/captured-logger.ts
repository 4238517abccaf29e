// A control-plane logger whose lines a test reads back (each a JSON object, as written).
import { Writable } from 'node:stream'
import { createLogger } from '@session-relay/control/logger'
import type { Logger } from '@session-relay/control/logger'

export function capturedLogger(level = 'info'): { logger: Logger; logs: string[] } {
  const logs: string[] = []
  const logger = createLogger(
    level,
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        logs.push(chunk.toString('utf8'))
        done()
      },
    }),
  )
  return { logger, logs }
}
