// The last N traces in memory, for one machine with no collector: fed by the SDK as a span
// processor (sdk.ts), read by the traces API. A trace is kept only once one of its spans names
// an application (`platform.application.id`: a build, an invoke), so the console's own polling
// never pushes them out, and a caller's right to read a trace is their right to read that
// application. Everything is bounded: traces, traces still undecided, spans per trace, the
// attributes of a span and the characters of a trace, whatever a caller or a function sends.
import type { Attributes, AttributeValue } from '@opentelemetry/api'
import { SpanStatusCode } from '@opentelemetry/api'
import type { tracing } from '@opentelemetry/sdk-node'
import { redactAttributes } from './redact.js'

type ReadableSpan = tracing.ReadableSpan

export type TraceLimits = {
  /** Traces kept, the oldest dropped first. */
  traces: number
  /** Spans of one trace; later ones are counted, not kept. */
  spansPerTrace: number
  /** Attributes of one span; the first ones are kept. */
  attributesPerSpan: number
  /** Characters of one name, key or value; longer ones are cut. */
  textChars: number
  /** Characters of one trace's names, keys and values together, at least textChars; past it a span is kept without its attributes, or counted, not kept. */
  traceChars: number
  /** Traces whose local root has not ended and that named no application yet. */
  undecided: number
}

export const DEFAULT_TRACE_LIMITS: Omit<TraceLimits, 'traces'> = {
  spansPerTrace: 128,
  attributesPerSpan: 32,
  textChars: 256,
  traceChars: 32 * 1024,
  undecided: 64,
}

export type SpanStatus = 'unset' | 'ok' | 'error'
export type StoredAttributes = Record<string, string | number | boolean>

export type StoredSpan = {
  spanId: string
  /** null: the trace's root here (no parent, or one in another process). */
  parentSpanId: string | null
  name: string
  /** Milliseconds since the epoch, fractional. */
  startMs: number
  durationMs: number
  status: SpanStatus
  attributes: StoredAttributes
}

export type StoredTrace = {
  traceId: string
  appId: string
  spans: StoredSpan[]
  /** Spans past the trace's caps: not kept. */
  droppedSpans: number
}

export type TraceSummary = {
  traceId: string
  appId: string
  /** The root span's name, else the earliest span's. */
  name: string
  startMs: number
  durationMs: number
  /** error when any span failed, else ok. */
  status: 'ok' | 'error'
  spanCount: number
}

export type TraceStore = {
  /** How many traces it keeps. */
  capacity: number
  /** The SDK's span processor that fills the store. */
  processor: tracing.SpanProcessor
  /** Kept traces, the last one to name its application first, optionally of some applications only. */
  list(appIds?: ReadonlySet<string>): TraceSummary[]
  /** One kept trace, its spans by start. */
  get(traceId: string): StoredTrace | null
  /** Characters held by kept and undecided traces (what the caps bound). */
  chars(): number
}

const APPLICATION = 'platform.application.id'

type Held = { appId: string | null; spans: StoredSpan[]; dropped: number; chars: number }

export function createTraceStore(limits: TraceLimits): TraceStore {
  // Maps iterate in insertion order: the first key is the oldest.
  const kept = new Map<string, Held>()
  const undecided = new Map<string, Held>()

  const keep = (traceId: string, appId: string): void => {
    if (kept.has(traceId)) return
    const held = undecided.get(traceId) ?? { appId: null, spans: [], dropped: 0, chars: 0 }
    undecided.delete(traceId)
    held.appId = appId
    kept.set(traceId, held)
    if (kept.size > limits.traces) kept.delete(kept.keys().next().value as string)
  }

  const add = (held: Held, span: ReadableSpan): void => {
    if (held.spans.length >= limits.spansPerTrace) {
      held.dropped++
      return
    }
    let stored = storedSpan(span, limits)
    let chars = charsOf(stored)
    // Past the trace's characters the span's timing still fits, without its attributes.
    if (held.chars + chars > limits.traceChars) {
      stored = { ...stored, attributes: {} }
      chars = charsOf(stored)
    }
    if (held.chars + chars > limits.traceChars) {
      held.dropped++
      return
    }
    held.chars += chars
    held.spans.push(stored)
  }

  const processor: tracing.SpanProcessor = {
    onStart(span) {
      const appId = span.attributes[APPLICATION]
      if (typeof appId === 'string' && appId !== '') keep(span.spanContext().traceId, own(appId, limits.textChars))
    },
    onEnd(span) {
      const { traceId } = span.spanContext()
      const known = kept.get(traceId)
      // A trace is read under its application's rules: a span naming another application (a
      // caller reusing a trace id across tenants) is not shown with it.
      const appId = span.attributes[APPLICATION]
      if (known !== undefined && typeof appId === 'string' && own(appId, limits.textChars) !== known.appId) {
        known.dropped++
        return
      }
      if (known !== undefined) return add(known, span)
      const parent = span.parentSpanContext
      if (parent === undefined || parent.isRemote === true) {
        // The local root ended and nothing in it named an application: not a trace to keep.
        undecided.delete(traceId)
        return
      }
      let held = undecided.get(traceId)
      if (held === undefined) {
        held = { appId: null, spans: [], dropped: 0, chars: 0 }
        undecided.set(traceId, held)
        if (undecided.size > limits.undecided) undecided.delete(undecided.keys().next().value as string)
      }
      add(held, span)
    },
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  }

  return {
    capacity: limits.traces,
    processor,
    list(appIds) {
      const summaries: TraceSummary[] = []
      for (const [traceId, held] of kept) {
        const appId = held.appId as string
        if (held.spans.length === 0 || (appIds !== undefined && !appIds.has(appId))) continue
        summaries.push(summaryOf(traceId, appId, held.spans))
      }
      return summaries.reverse()
    },
    get(traceId) {
      const held = kept.get(traceId)
      if (held === undefined || held.spans.length === 0) return null
      const spans = [...held.spans].sort((a, b) => a.startMs - b.startMs)
      return { traceId, appId: held.appId as string, spans, droppedSpans: held.dropped }
    },
    chars() {
      let total = 0
      for (const held of kept.values()) total += held.chars
      for (const held of undecided.values()) total += held.chars
      return total
    },
  }
}

function summaryOf(traceId: string, appId: string, spans: StoredSpan[]): TraceSummary {
  let first = spans[0] as StoredSpan
  let root: StoredSpan | undefined
  let end = -Infinity
  let failed = false
  for (const span of spans) {
    if (span.startMs < first.startMs) first = span
    if (span.parentSpanId === null && (root === undefined || span.startMs < root.startMs)) root = span
    end = Math.max(end, span.startMs + span.durationMs)
    failed ||= span.status === 'error'
  }
  return {
    traceId,
    appId,
    name: (root ?? first).name,
    startMs: first.startMs,
    durationMs: end - first.startMs,
    status: failed ? 'error' : 'ok',
    spanCount: spans.length,
  }
}

const hrMs = ([seconds, nanos]: [number, number]): number => seconds * 1000 + nanos / 1e6

function storedSpan(span: ReadableSpan, limits: TraceLimits): StoredSpan {
  const parent = span.parentSpanContext
  return {
    spanId: span.spanContext().spanId,
    // A parent in another process (the caller's traceparent) is not in this trace's spans.
    parentSpanId: parent === undefined || parent.isRemote === true ? null : parent.spanId,
    name: own(span.name, limits.textChars),
    startMs: hrMs(span.startTime),
    durationMs: hrMs(span.duration),
    status:
      span.status.code === SpanStatusCode.ERROR ? 'error' : span.status.code === SpanStatusCode.OK ? 'ok' : 'unset',
    // The same redaction as on the way to a collector: no query string is kept either.
    attributes: storedAttributes(redactAttributes(span.attributes), limits),
  }
}

function storedAttributes(attributes: Attributes, limits: TraceLimits): StoredAttributes {
  const stored: StoredAttributes = {}
  let count = 0
  for (const [key, value] of Object.entries(attributes)) {
    if (count >= limits.attributesPerSpan) break
    const kept = storedValue(value, limits.textChars)
    if (kept === undefined) continue
    stored[own(key, limits.textChars)] = kept
    count++
  }
  return stored
}

function storedValue(value: AttributeValue | undefined, max: number): string | number | boolean | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value === 'number' || typeof value === 'boolean') return value
  if (typeof value === 'string') return own(value, max)
  // An array: its first elements as JSON text, never the whole of a huge one.
  const shown: unknown[] = []
  let length = 2
  for (const item of value) {
    if (length > max) break
    const text = typeof item === 'string' ? item.slice(0, max) : item
    shown.push(text)
    length += String(text).length + 3
  }
  return own(JSON.stringify(shown), max)
}

// V8 keeps a slice of 13 characters or more as a view into the string it was cut from, so a
// 256-character cut of a megabyte would keep the megabyte; and a value the SDK holds may itself
// be such a view (redact.ts cuts URLs). A copy through UTF-8 owns its characters.
function own(text: string, max: number): string {
  const cut = text.length > max ? `${text.slice(0, max - 1)}…` : text
  return cut.length < 13 ? cut : Buffer.from(cut, 'utf8').toString('utf8')
}

function charsOf(span: StoredSpan): number {
  let chars = span.name.length
  for (const [key, value] of Object.entries(span.attributes))
    chars += key.length + (typeof value === 'string' ? value.length : 8)
  return chars
}
