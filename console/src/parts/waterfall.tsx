// One trace drawn as a waterfall: a row per span in tree order (each under its parent, siblings
// by start), its name indented by depth, and a bar offset by its start and as wide as its
// duration on the trace's time scale. Bars are SVG rectangles placed in percent of the trace's
// duration, so they follow the page's width without measuring it. A build's steps are listed
// apart with their durations.
import type { Trace, TraceSpan } from '../api/types'

const MAX_INDENT = 8

/** The spans depth first, each with its depth; a span whose parent is not kept is a root. */
function inTreeOrder(spans: TraceSpan[]): Array<{ span: TraceSpan; depth: number }> {
  const ids = new Set(spans.map((span) => span.spanId))
  const children = new Map<string | null, TraceSpan[]>()
  for (const span of spans) {
    const parent = span.parentSpanId !== null && ids.has(span.parentSpanId) ? span.parentSpanId : null
    children.set(parent, [...(children.get(parent) ?? []), span])
  }
  const rows: Array<{ span: TraceSpan; depth: number }> = []
  const visit = (parent: string | null, depth: number): void => {
    const under = [...(children.get(parent) ?? [])].sort((a, b) => a.startOffsetMs - b.startOffsetMs)
    for (const span of under) {
      rows.push({ span, depth })
      visit(span.spanId, depth + 1)
    }
  }
  visit(null, 0)
  return rows
}

/** Milliseconds as people read them: three significant digits, seconds past one. */
export function duration(ms: number): string {
  if (ms >= 1000) return `${(ms / 1000).toPrecision(3)} s`
  return `${ms < 1 ? ms.toFixed(2) : ms.toPrecision(3)} ms`
}

const percent = (part: number, whole: number): string => `${whole > 0 ? (part / whole) * 100 : 0}%`

export function Waterfall({ trace }: { trace: Trace }) {
  const total = trace.durationMs
  const build = trace.spans.find((span) => span.name === 'build')
  const steps =
    build === undefined
      ? []
      : trace.spans
          .filter((span) => span.parentSpanId === build.spanId)
          .sort((a, b) => a.startOffsetMs - b.startOffsetMs)
  return (
    <>
      {steps.length > 0 && (
        <section aria-labelledby="build-steps">
          <h2 id="build-steps">Build steps</h2>
          <table class="steps">
            <caption class="visually-hidden">The build's steps in order, with their durations</caption>
            <thead>
              <tr>
                <th scope="col">Step</th>
                <th scope="col">Duration</th>
              </tr>
            </thead>
            <tbody>
              {steps.map((step) => (
                <tr key={step.spanId} data-step={String(step.attributes['platform.build.step'] ?? step.name)}>
                  <td>{String(step.attributes['platform.build.step'] ?? step.name)}</td>
                  <td>{duration(step.durationMs)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
      <section aria-labelledby="waterfall">
        <h2 id="waterfall">Spans</h2>
        <ol class="waterfall">
          {inTreeOrder(trace.spans).map(({ span, depth }) => (
            <li key={span.spanId} data-span={span.name} data-span-id={span.spanId} data-depth={depth}>
              <details>
                <summary class="span-row">
                  <span class={`span-name indent-${Math.min(depth, MAX_INDENT)}`}>
                    {span.name}
                    {span.status === 'error' && <span class="tag status-failed">error</span>}
                  </span>
                  <span class="span-duration">{duration(span.durationMs)}</span>
                  <svg
                    class="span-bar"
                    role="img"
                    aria-label={`starts at ${duration(span.startOffsetMs)}, lasts ${duration(span.durationMs)}`}
                  >
                    <rect
                      class={span.status === 'error' ? 'span-fill error' : 'span-fill'}
                      x={percent(span.startOffsetMs, total)}
                      width={percent(span.durationMs, total)}
                      y="3"
                      height="14"
                      rx="2"
                      data-offset={span.startOffsetMs}
                      data-duration={span.durationMs}
                    />
                  </svg>
                </summary>
                <dl class="facts">
                  <dt>starts</dt>
                  <dd>+{duration(span.startOffsetMs)}</dd>
                  {Object.entries(span.attributes).map(([key, value]) => [
                    <dt key={`k-${key}`}>{key}</dt>,
                    <dd key={`v-${key}`} class="break">
                      {String(value)}
                    </dd>,
                  ])}
                </dl>
              </details>
            </li>
          ))}
        </ol>
        {trace.droppedSpans > 0 && (
          <p class="muted small">{trace.droppedSpans} more spans were past the trace's limits and not kept.</p>
        )}
      </section>
    </>
  )
}
