// Dependencies this version has no client for yet. The endpoints that need them exist, with
// their full request schemas, check what they can (ids, parameters) and then answer 503, so
// adding the Prometheus client changes handlers, not the API.
import type { ControlConfig } from './config.js'
import { UnavailableError } from './errors.js'

export function metricsUnavailable (config: ControlConfig): UnavailableError {
  if (config.prometheusUrl === '') return new UnavailableError('metrics not configured: set PLATFORM_PROMETHEUS_URL')
  return new UnavailableError('metrics not available: this version has no Prometheus client yet')
}
