// traces: the last traces the control plane keeps in memory (--traces-kept) for an application,
// and one of them as an indented list of its spans, each with its offset and duration: the
// console's waterfall in a terminal.
import { getApp } from '../applications.js'
import type { Trace, TraceList } from '../api/types.js'
import { apiFor } from '../context.js'
import type { Io } from '../context.js'
import { UsageError } from '../errors.js'
import { parseCommand } from '../table.js'
import { printJson, table } from './listing.js'

const ms = (value: number): string => `${value.toFixed(1)} ms`

export async function tracesCommand(args: string[], io: Io): Promise<number> {
  const parsed = parseCommand('traces', args)
  const [name, traceId] = parsed.positionals as [string, string | undefined]
  const api = await apiFor(parsed, io)
  const app = await getApp(api, name)
  if (traceId === undefined) {
    const list = await api.json<TraceList>('GET', `/applications/${encodeURIComponent(app.id)}/traces`)
    if (parsed.values.json === true) return printJson(io, list)
    if (list.kept === 0) io.stderr.write('the control plane keeps no traces (--traces-kept 0)\n')
    io.stdout.write(
      table(
        ['TRACE', 'STARTED', 'DURATION', 'STATUS', 'REQUEST'],
        list.traces.map((trace) => [trace.traceId, trace.start, ms(trace.durationMs), trace.status, trace.name]),
      ),
    )
    return 0
  }
  if (!/^[0-9a-f]{32}$/.test(traceId)) throw new UsageError('TRACE: 32 lower-case hex digits, as `traces NAME` lists')
  const trace = await api.json<Trace>('GET', `/traces/${traceId}`)
  if (trace.appId !== app.id) throw new UsageError(`trace ${traceId} is not ${app.name}'s`)
  if (parsed.values.json === true) return printJson(io, trace)
  io.stdout.write(
    table(
      ['START', 'DURATION', 'STATUS', 'SPAN'],
      inTreeOrder(trace.spans).map(({ span, depth }) => [
        `+${ms(span.startOffsetMs)}`,
        ms(span.durationMs),
        span.status,
        `${'  '.repeat(depth)}${span.name}`,
      ]),
    ),
  )
  return 0
}

type Span = Trace['spans'][number]

/** Depth first, siblings by start; a span whose parent is not kept is a root. */
function inTreeOrder(spans: Span[]): Array<{ span: Span; depth: number }> {
  const ids = new Set(spans.map((span) => span.spanId))
  const rows: Array<{ span: Span; depth: number }> = []
  const visit = (parent: string | null, depth: number): void => {
    for (const span of spans)
      if ((span.parentSpanId !== null && ids.has(span.parentSpanId) ? span.parentSpanId : null) === parent) {
        rows.push({ span, depth })
        visit(span.spanId, depth + 1)
      }
  }
  visit(null, 0)
  return rows
}
