// Where the applications' metrics come from: a Prometheus and how long it may take, or the
// control plane's own series and how long it keeps them; the shortest rate() window either way.
import { parseHttpUrl, parseTimerDuration } from '@session-relay/common/config/settings'
import { parseDuration } from '@session-relay/common/config/duration'
import { rowOf, withoutTrailingSlash } from '../setting-parsers.js'

export type MetricsSettings = {
  prometheusUrl: string // without trailing slash
  prometheusTimeoutMs: number // per query_range request, also sent to Prometheus as its own timeout
  metricsRateWindowMs: number // shortest rate() window; at least four scrape intervals
  metricsRetentionMs: number // without Prometheus: how long the data directory keeps each series
}

const setting = rowOf<MetricsSettings>()

// A window PromQL can hold: whole milliseconds, at least 1s (a rate needs two samples in it).
function parseRateWindow(text: string): number {
  const ms = parseTimerDuration(text)
  if (ms < 1000 || !Number.isInteger(ms))
    throw new Error('expected a duration of at least 1s in whole milliseconds, e.g. 1m')
  return ms
}

// At least an hour (the console's shortest charts); at most 30 days of 10 s steps per series.
function parseRetention(text: string): number {
  const ms = parseDuration(text)
  if (!(ms >= 3_600_000 && ms <= 30 * 24 * 3_600_000)) throw new Error('expected a duration from 1h to 720h, e.g. 24h')
  return ms
}

export const metricsSettings = [
  setting({
    key: 'prometheusUrl',
    env: 'PLATFORM_PROMETHEUS_URL',
    flag: '--prometheus-url',
    default: '',
    parse: (text) => withoutTrailingSlash(parseHttpUrl(text)),
    help: "Prometheus HTTP API base URL; empty: the control plane's own series (metrics/)",
    secret: true,
  }),
  setting({
    key: 'prometheusTimeoutMs',
    env: 'PLATFORM_PROMETHEUS_TIMEOUT',
    flag: '--prometheus-timeout',
    default: '10s',
    parse: parseTimerDuration,
    help: 'how long one query_range may take (also sent to Prometheus as its timeout); then 503',
  }),
  setting({
    key: 'metricsRateWindowMs',
    env: 'PLATFORM_METRICS_RATE_WINDOW',
    flag: '--metrics-rate-window',
    default: '1m',
    parse: parseRateWindow,
    help: 'shortest rate() window, at least 1s (four scrape intervals or more)',
  }),
  setting({
    key: 'metricsRetentionMs',
    env: 'PLATFORM_METRICS_RETENTION',
    flag: '--metrics-retention',
    default: '24h',
    parse: parseRetention,
    help: 'no --prometheus-url: keep series this long in the data directory (1h-720h)',
  }),
]
