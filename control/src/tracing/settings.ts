// How many traces the control plane keeps in memory for the console (tracing/store.ts); 0 keeps
// none, and then, with no OTLP endpoint either, the OpenTelemetry SDK is never loaded.
import { integerFromZeroTo, rowOf } from '../setting-parsers.js'

export type TracingSettings = {
  tracesKept: number // the last N traces that named an application; 0: none
}

const setting = rowOf<TracingSettings>()

export const tracingSettings = [
  setting({
    key: 'tracesKept',
    env: 'PLATFORM_TRACES_KEPT',
    flag: '--traces-kept',
    default: '100',
    // 1000 traces each at every cap hold about 63 MiB (docs/control-plane.md, npm run bench:trace-memory).
    parse: integerFromZeroTo(1000),
    help: 'keep the last N traces of builds and invokes in memory for the API and console (0: none)',
  }),
]
