// A real OpenTelemetry Collector for the trace tests (built by scripts/install-otel-collector.sh;
// npm test runs it when the binary is missing): its OTLP receiver (HTTP) on 127.0.0.1 and a port
// the kernel picks, read back from the collector's own log, and its OTLP/HTTP exporter sending
// JSON, with no queue and no retry so each batch leaves as it arrives, to a small OTLP/HTTP
// endpoint of the test, which keeps everything exported. What the code under test sends goes
// through the collector's decoding and re-encoding, as it would in production.
import type { ChildProcess } from 'node:child_process'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { stopChild } from './stop-child.js'
import { withTimeout } from './wait.js'

const repo = new URL('../../', import.meta.url).pathname

const INSTALL_HINT =
  'the OpenTelemetry Collector is not built: run scripts/install-otel-collector.sh (Go and the module proxy; minutes once); npm test does it'

/** Where scripts/install-otel-collector.sh puts the collector of the version it pins. */
function otelcolPath(): string {
  const script = readFileSync(join(repo, 'scripts/install-otel-collector.sh'), 'utf8')
  const version = /^OTELCOL_VERSION=(\S+)/m.exec(script)?.[1]
  if (version === undefined) throw new Error('no OTELCOL_VERSION in scripts/install-otel-collector.sh')
  return join(repo, '.cache/otelcol', version, 'bin/otelcol')
}

export type OtlpAttribute = { key: string; value: Record<string, unknown> }

/** A span as OTLP/JSON has it, with its resource's service.name alongside. */
type ExportedSpan = {
  service: string
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind?: number
  startTimeUnixNano: string
  endTimeUnixNano: string
  attributes?: OtlpAttribute[]
  status?: { code?: number; message?: string }
}

export type TestCollector = {
  /** http://127.0.0.1:port of the OTLP/HTTP receiver: what OTEL_EXPORTER_OTLP_ENDPOINT takes. */
  endpoint: string
  /** Every span exported so far, in the order the batches arrived. */
  spans(): ExportedSpan[]
  /** Every body the collector exported so far, as received: what a search for secrets reads. */
  exported(): string
  /** Resolves with the spans so far once `check` holds for them, on each batch as it arrives. */
  waitFor(check: (spans: ExportedSpan[]) => boolean, timeoutMs?: number, what?: string): Promise<ExportedSpan[]>
  /** The collector's log so far, for a failure's message. */
  log(): string
}

type TracesBody = {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpAttribute[] }
    scopeSpans?: Array<{ spans?: Array<Omit<ExportedSpan, 'service'>> }>
  }>
}

/** The string value of an attribute (OTLP/JSON's `stringValue`), or undefined. */
export function attribute(attributes: OtlpAttribute[] | undefined, key: string): string | number | boolean | undefined {
  const found = attributes?.find((entry) => entry.key === key)?.value
  if (found === undefined) return undefined
  const [value] = Object.values(found)
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : undefined
}

function flatten(body: TracesBody): ExportedSpan[] {
  const spans: ExportedSpan[] = []
  for (const resource of body.resourceSpans ?? []) {
    const service = String(attribute(resource.resource?.attributes, 'service.name') ?? '')
    for (const scope of resource.scopeSpans ?? [])
      for (const span of scope.spans ?? []) spans.push({ service, ...span })
  }
  return spans
}

export async function startCollector(t: Test): Promise<TestCollector> {
  const binary = otelcolPath()
  if (!existsSync(binary)) throw new Error(INSTALL_HINT)
  const bodies: string[] = []
  const spans: ExportedSpan[] = []
  const listeners = new Set<() => void>()
  const sink = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      bodies.push(text)
      if (request.url === '/v1/traces') spans.push(...flatten(JSON.parse(text) as TracesBody))
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      for (const listener of listeners) listener()
    })
  })
  const dir = mkdtempSync(join(tmpdir(), 'test-otelcol-'))
  const children: ChildProcess[] = []
  // Registered before anything starts: a failed start still stops what did and cleans up.
  t.teardown(async () => {
    for (const child of children) await stopChild(child)
    await new Promise<void>((resolve) => sink.close(() => resolve()))
    rmSync(dir, { recursive: true, force: true })
  })
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve))
  const sinkPort = (sink.address() as AddressInfo).port

  // JSON is YAML: no YAML writer needed.
  const config = join(dir, 'config.yaml')
  writeFileSync(
    config,
    JSON.stringify({
      receivers: { otlp: { protocols: { http: { endpoint: '127.0.0.1:0' } } } },
      exporters: {
        otlphttp: {
          endpoint: `http://127.0.0.1:${sinkPort}`,
          encoding: 'json',
          compression: 'none',
          sending_queue: { enabled: false },
          retry_on_failure: { enabled: false },
        },
      },
      service: {
        telemetry: { metrics: { level: 'none' }, logs: { level: 'info', encoding: 'json' } },
        pipelines: {
          traces: { receivers: ['otlp'], exporters: ['otlphttp'] },
          logs: { receivers: ['otlp'], exporters: ['otlphttp'] },
          metrics: { receivers: ['otlp'], exporters: ['otlphttp'] },
        },
      },
    }),
  )
  let stderr = ''
  const started = spawn(binary, ['--config', `file:${config}`], { stdio: ['ignore', 'ignore', 'pipe'] })
  children.push(started)
  const endpoint = await withTimeout(
    new Promise<string>((resolve, reject) => {
      let pending = ''
      started.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
        stderr += chunk
        pending += chunk
        const lines = pending.split('\n')
        pending = lines.pop() ?? ''
        for (const line of lines) {
          const entry = JSON.parse(line.startsWith('{') ? line : '{}') as { msg?: string; endpoint?: string }
          if (entry.msg === 'Starting HTTP server' && entry.endpoint !== undefined) resolve(`http://${entry.endpoint}`)
        }
      })
      started.once('exit', (code) => reject(new Error(`otelcol exited at start (${code}): ${stderr.slice(-2_000)}`)))
    }),
    30_000,
    'the collector to listen',
  )

  return {
    endpoint,
    spans: () => [...spans],
    exported: () => bodies.join('\n'),
    waitFor(check, timeoutMs = 20_000, what = 'spans') {
      return new Promise<ExportedSpan[]>((resolve, reject) => {
        const listener = (): void => {
          if (!check(spans)) return
          done()
          resolve([...spans])
        }
        const timer = setTimeout(() => {
          done()
          const seen = spans.map((span) => `${span.service}/${span.name}`).join(', ')
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; spans exported: ${seen}`))
        }, timeoutMs)
        const done = (): void => {
          clearTimeout(timer)
          listeners.delete(listener)
        }
        listeners.add(listener)
        listener()
      })
    },
    log: () => stderr,
  }
}

/**
 * A loopback HTTP service a function calls in the trace tests: it answers `pong` and keeps the
 * traceparent of each request it gets, to show the function's outgoing request joined the trace.
 */
export async function traceparentService(t: Test): Promise<{ origin: string; received: Array<string | undefined> }> {
  const received: Array<string | undefined> = []
  const service = createServer((request, response) => {
    received.push(request.headersDistinct.traceparent?.join(', '))
    response.end('pong')
  })
  t.teardown(() => new Promise<void>((resolve) => service.close(() => resolve())))
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve))
  return { origin: `http://127.0.0.1:${(service.address() as AddressInfo).port}`, received }
}
