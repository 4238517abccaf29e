// Whether a process exports traces: only when the standard OTEL_* variables name an OTLP
// endpoint, and OTEL_SDK_DISABLED does not turn them off. Otherwise the caller never loads the
// SDK. Shared by the control plane and the relay so that both read the same variables alike;
// it imports nothing, so neither pays for OpenTelemetry by asking.

const ENDPOINTS = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']

export function tracingConfigured(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return false
  return ENDPOINTS.some((name) => (env[name]?.trim() ?? '') !== '')
}
