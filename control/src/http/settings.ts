// The HTTP server's settings: where it listens, how long a slow or idle client may hold a
// connection, how many it keeps, its shutdown and its logs. Read by http/app.ts and main.ts.
import type { ListenAddress } from '@session-relay/common/config/settings'
import {
  parseListenAddress,
  parseLogLevel,
  parsePositiveBytes,
  parseTimerDuration,
} from '@session-relay/common/config/settings'
import { parseDuration } from '@session-relay/common/config/duration'
import { integerUpTo, rowOf } from '../setting-parsers.js'

export type HttpSettings = {
  addr: ListenAddress
  maxArchiveBytes: number // compressed upload and unpacked total of a source archive
  headersTimeoutMs: number // a request's headers must be complete within this
  minBodyBytes: number // a request body must bring at least this many bytes ...
  bodyRateWindowMs: number // ... in every window of this length, else the connection is cut
  keepAliveTimeoutMs: number // an idle keep-alive connection is closed after this
  maxConnections: number // connections past this many are closed on accept
  shutdownDelayMs: number // on SIGTERM: unready but still serving for this long, then stop
  logLevel: string
}

const setting = rowOf<HttpSettings>()

// 0 is allowed (stop at once); a minute is far more than any load balancer needs.
function parseShutdownDelay(text: string): number {
  const ms = parseDuration(text)
  if (ms < 0 || ms > 60_000) throw new Error('expected a duration from 0s to 1m')
  return ms
}

export const httpSettings = [
  setting({
    key: 'addr',
    env: 'PLATFORM_ADDR',
    flag: '--addr',
    default: ':8081',
    parse: parseListenAddress,
    help: 'listen address (:8081, 127.0.0.1:9000, [::1]:9000); port 0 picks a free one',
  }),
  setting({
    key: 'maxArchiveBytes',
    env: 'PLATFORM_MAX_ARCHIVE_BYTES',
    flag: '--max-archive-bytes',
    default: '8MiB',
    parse: parsePositiveBytes,
    help: "largest source: an upload's compressed bytes, and the files' total unpacked size",
  }),
  setting({
    key: 'headersTimeoutMs',
    env: 'PLATFORM_HEADERS_TIMEOUT',
    flag: '--headers-timeout',
    default: '10s',
    parse: parseTimerDuration,
    help: "a request's headers must be complete within this, else 408",
  }),
  setting({
    key: 'minBodyBytes',
    env: 'PLATFORM_MIN_BODY_BYTES',
    flag: '--min-body-bytes',
    default: '1KiB',
    parse: parsePositiveBytes,
    help: 'least a request body must bring per --body-rate-window, else closed',
  }),
  setting({
    key: 'bodyRateWindowMs',
    env: 'PLATFORM_BODY_RATE_WINDOW',
    flag: '--body-rate-window',
    default: '10s',
    parse: parseTimerDuration,
    help: 'the window --min-body-bytes is counted over',
  }),
  setting({
    key: 'keepAliveTimeoutMs',
    env: 'PLATFORM_KEEP_ALIVE_TIMEOUT',
    flag: '--keep-alive-timeout',
    default: '72s',
    parse: parseTimerDuration,
    help: 'an idle keep-alive connection is closed after this',
  }),
  setting({
    key: 'maxConnections',
    env: 'PLATFORM_MAX_CONNECTIONS',
    flag: '--max-connections',
    default: '1000',
    parse: integerUpTo(1_000_000),
    help: 'most connections open at once; more are closed as they are accepted (1 to 1000000)',
  }),
  setting({
    key: 'shutdownDelayMs',
    env: 'PLATFORM_SHUTDOWN_DELAY',
    flag: '--shutdown-delay',
    default: '0s',
    parse: parseShutdownDelay,
    help: 'on SIGTERM, how long /readyz answers 503 before the listener closes',
  }),
  setting({
    key: 'logLevel',
    env: 'PLATFORM_LOG_LEVEL',
    flag: '--log-level',
    default: 'info',
    parse: parseLogLevel,
    help: 'pino level, silent to turn logs off',
  }),
]
