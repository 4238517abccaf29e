// Whether the control plane exports traces: only when the standard OTEL_* variables name an OTLP
// endpoint, and OTEL_SDK_DISABLED does not turn them off; and whether it loads the SDK at all:
// to export, or to keep the last traces in memory (--traces-kept). Otherwise the SDK is never
// loaded, so tracing costs nothing but the no-op API the spans are opened through. Whether an
// endpoint is named is common's (the relay reads the same variables).
import { tracingConfigured } from '@session-relay/common/tracing/configured'

export type TracingPlan = { loadSdk: boolean; exportOtlp: boolean; keepTraces: boolean }

/** OTEL_SDK_DISABLED turns off the store too; OTEL_TRACES_EXPORTER=none only the export. */
export function tracingPlan(env: NodeJS.ProcessEnv, tracesKept: number): TracingPlan {
  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true'
  const exportOtlp = tracingConfigured(env)
  const keepTraces = !disabled && tracesKept > 0
  return { loadSdk: exportOtlp || keepTraces, exportOtlp, keepTraces }
}

/**
 * The OTEL_* variables a child that exports its own spans gets (the local worker): the
 * exporter's, sampler's and resource's settings, so its spans land in the same collector. Not
 * OTEL_SERVICE_NAME: the child has a name of its own. Nothing when tracing is off here.
 */
export function childTraceEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  if (!tracingConfigured(env)) return {}
  const picked: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && name.startsWith('OTEL_') && name !== 'OTEL_SERVICE_NAME') picked[name] = value
  }
  return picked
}
