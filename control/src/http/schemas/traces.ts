// The traces the control plane keeps in memory (tracing/store.ts), as the API shows them: a list
// of summaries, and one trace's spans with offsets from the trace's start, ready to draw.
import { Type } from 'typebox'

export const TraceParams = Type.Object({
  traceId: Type.String({ pattern: '^[0-9a-f]{32}$', description: 'W3C trace id: 32 lower-case hex digits' }),
})

const Status = Type.Union([Type.Literal('ok'), Type.Literal('error')])

export const TraceSummary = Type.Object(
  {
    traceId: Type.String(),
    appId: Type.String({ description: 'the application a span of the trace named' }),
    name: Type.String({ description: "the root span's name (the API request's)" }),
    start: Type.String({ format: 'date-time' }),
    durationMs: Type.Number({ description: 'from the first span start to the last span end' }),
    status: Status,
    spanCount: Type.Integer(),
  },
  { additionalProperties: false },
)

export const TraceList = Type.Object(
  {
    kept: Type.Integer({ description: 'how many traces this process keeps (--traces-kept); 0: none' }),
    traces: Type.Array(TraceSummary, { description: 'newest first' }),
  },
  { additionalProperties: false },
)

const AttributeValue = Type.Union([Type.String(), Type.Number(), Type.Boolean()])

export const TraceSpan = Type.Object(
  {
    spanId: Type.String(),
    parentSpanId: Type.Union([Type.String(), Type.Null()], {
      description: "null for the trace's root in this process (its parent, if any, is the caller's)",
    }),
    name: Type.String(),
    startOffsetMs: Type.Number({ description: "from the trace's start" }),
    durationMs: Type.Number(),
    status: Type.Union([Type.Literal('unset'), Type.Literal('ok'), Type.Literal('error')]),
    attributes: Type.Record(Type.String(), AttributeValue, {
      description: 'at most 32, each value cut to 256 characters, no query string',
    }),
  },
  { additionalProperties: false },
)

export const Trace = Type.Object(
  {
    traceId: Type.String(),
    appId: Type.String(),
    start: Type.String({ format: 'date-time' }),
    durationMs: Type.Number(),
    spans: Type.Array(TraceSpan, { description: 'by start' }),
    droppedSpans: Type.Integer({ description: "spans past the trace's caps (128 spans, 32 Ki characters), not kept" }),
  },
  { additionalProperties: false },
)
