// A build as a span with a child per step, read from what the builder already reports: its
// queue wait from the runtime, the other steps from the build log's step lines (`==> name:`,
// builders/src/run-step.ts), the push from its `built in` line to the end. The builder needs no
// tracing of its own, and on one machine the log is already read as it comes.
import { context, SpanStatusCode, trace } from '@opentelemetry/api'
import type { Context, Span } from '@opentelemetry/api'

const tracer = trace.getTracer('session-relay-control')

// One clock for the build and all its steps: the SDK anchors each span's own clock to the
// wall clock's millisecond when it starts, so steps that start together (several step lines
// in one chunk) would tie, and a step's end could fall past its build's by a fraction of one.
const now = (): number => performance.timeOrigin + performance.now()

// The builder's step names (builders/src/languages.ts) as the steps a trace shows.
const STEP_OF: Record<string, string> = {
  'go mod tidy': 'fetch',
  'cargo fetch': 'fetch',
  'go build': 'compile',
  'cargo build': 'compile',
  bundle: 'bundle',
  componentize: 'componentize',
}

const STEP_LINE = /^==> ([a-z][a-z ]*?):/
// A line longer than this is output, not a step line: nothing is kept of it.
const MAX_PENDING = 256

export type BuildTrace = {
  /** The build left the queue: the queue wait ends. */
  running(): void
  /** Some of the builder's output, as it comes. */
  output(chunk: Buffer): void
  /** The build ended; every open span ends with it. */
  finished(status: 'succeeded' | 'failed'): void
}

/** Opened when the build is queued, a child of the span active then (the API request's). */
export function startBuildTrace(buildId: string, attributes: { appId: string; language: string }): BuildTrace {
  const common = { 'platform.build.id': buildId }
  const build = tracer.startSpan('build', {
    startTime: now(),
    attributes: { ...common, 'platform.application.id': attributes.appId, 'platform.language': attributes.language },
  })
  const within: Context = trace.setSpan(context.active(), build)
  const child = (step: string): Span =>
    tracer.startSpan(
      `build ${step}`,
      { startTime: now(), attributes: { ...common, 'platform.build.step': step } },
      within,
    )
  let step: Span | null = child('queue wait')
  let pending = ''
  const next = (name: string | null): void => {
    step?.end(now())
    step = name === null ? null : child(name)
  }
  const line = (text: string): void => {
    const marked = STEP_LINE.exec(text)?.[1]
    const name = marked === undefined ? undefined : STEP_OF[marked]
    if (name !== undefined) next(name)
    else if (text.startsWith('built in ')) next('push')
  }
  return {
    running: () => next(null),
    output(chunk) {
      const lines = (pending + chunk.toString('utf8')).split('\n')
      pending = lines.pop() ?? ''
      if (pending.length > MAX_PENDING) pending = ''
      for (const text of lines) line(text)
    },
    finished(status) {
      next(null)
      build.setAttribute('platform.build.status', status)
      if (status === 'failed') build.setStatus({ code: SpanStatusCode.ERROR })
      build.end(now())
    },
  }
}
