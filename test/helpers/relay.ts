import type { Test } from 'tap'
import WebSocket from 'ws'
import type { RawData } from 'ws'
import { parseConfig } from '@session-relay/relay/config'
import type { RelayConfig } from '@session-relay/relay/config'
import { createLogger } from '@session-relay/relay/logger'
import { startRelay } from '@session-relay/relay/server'
import type { RelayDeps } from '@session-relay/relay/server'

export type TestRelay = {
  config: RelayConfig
  port: number
  http: string
  ws: string
  /** Every log line the relay wrote, parsed. */
  logs: Array<Record<string, unknown>>
  logText: () => string
  /** Entries in the relay's session table, closed ones awaiting the sweep included. */
  sessionCount: () => number
  /** Bytes the relay counts against its backlog limits right now. */
  backlogBytes: () => number
  shutdown: () => Promise<void>
}

/**
 * A relay on 127.0.0.1 and an ephemeral port, built from the same flags the binary takes,
 * with its logs captured for assertions. Shut down when the test ends.
 */
export async function startTestRelay(
  t: Test,
  flags: string[] = ['--no-auth'],
  deps: Partial<RelayDeps> = {},
): Promise<TestRelay> {
  const config = parseConfig(['--addr', '127.0.0.1:0', '--log-level', 'debug', ...flags], {})
  const lines: string[] = []
  const logger = createLogger(config.logLevel, {
    write: (line: string) => {
      lines.push(line)
    },
  })
  let relay: Awaited<ReturnType<typeof startRelay>> | null = null
  t.teardown(() => relay?.shutdown())
  relay = await startRelay(config, { logger, ...deps })
  const scheme = config.tlsCert === '' ? '' : 's'
  const host = `127.0.0.1:${relay.port}`
  return {
    config,
    port: relay.port,
    http: `http${scheme}://${host}`,
    ws: `ws${scheme}://${host}`,
    get logs() {
      return lines.map((line) => JSON.parse(line) as Record<string, unknown>)
    },
    logText: () => lines.join(''),
    sessionCount: () => relay.sessionCount(),
    backlogBytes: () => relay.backlogBytes(),
    shutdown: () => relay.shutdown(),
  }
}

export type Created = {
  id: string
  initiator_token: string
  responder_token: string
  initiator_url?: string
  responder_url?: string
  created_at: string
  expires_at: string
}

export async function createSession(relay: TestRelay, headers: Record<string, string> = {}): Promise<Created> {
  const response = await fetch(`${relay.http}/admin/sessions`, { method: 'POST', headers })
  if (response.status !== 201) throw new Error(`create answered ${response.status}: ${await response.text()}`)
  return (await response.json()) as Created
}

export async function getSession(
  relay: TestRelay,
  id: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${relay.http}/admin/sessions/${id}`)
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

type Received = { data: Buffer; isBinary: boolean }

/** A WebSocket client that records what it receives and how it was closed. */
export type TestPeer = {
  socket: WebSocket
  received: Received[]
  /** Resolves once `count` messages have arrived in total. */
  receive: (count: number) => Promise<Received[]>
  closed: Promise<{ code: number; reason: string }>
}

export type Refusal = { status: number; body: unknown; headers: Record<string, string | string[] | undefined> }

export function attach(
  url: string,
  opts: {
    token?: string
    query?: boolean
    headers?: Record<string, string>
    origin?: string
    ca?: string | Buffer
  } = {},
): Promise<TestPeer> {
  const headers: Record<string, string> = { ...opts.headers }
  let target = url
  if (opts.token !== undefined) {
    if (opts.query === true) target += `?token=${encodeURIComponent(opts.token)}`
    else headers.authorization = `Bearer ${opts.token}`
  }
  const socket = new WebSocket(target, {
    headers,
    ...(opts.origin !== undefined ? { origin: opts.origin } : {}),
    ...(opts.ca !== undefined ? { ca: opts.ca } : {}),
  })
  const received: Received[] = []
  const waiters: Array<{ count: number; resolve: (r: Received[]) => void }> = []
  socket.on('message', (data: RawData, isBinary: boolean) => {
    received.push({ data: Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer), isBinary })
    for (const waiter of waiters.filter((w) => received.length >= w.count)) {
      waiters.splice(waiters.indexOf(waiter), 1)
      waiter.resolve(received.slice(0, waiter.count))
    }
  })
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() }))
  })
  const peer: TestPeer = {
    socket,
    received,
    closed,
    receive: (count) =>
      received.length >= count
        ? Promise.resolve(received.slice(0, count))
        : new Promise((resolve) => waiters.push({ count, resolve })),
  }
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(peer))
    socket.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        let body: unknown = text
        try {
          body = JSON.parse(text)
        } catch {}
        const refusal: Refusal = { status: res.statusCode ?? 0, body, headers: res.headers }
        reject(Object.assign(new Error(`attach refused with ${res.statusCode}`), { refusal }))
      })
    })
    socket.once('error', reject)
  })
}

/** The refusal an attach got, or a failed test if it was accepted. */
export async function refusalOf(attempt: Promise<TestPeer>): Promise<Refusal> {
  try {
    const peer = await attempt
    peer.socket.terminate()
  } catch (error) {
    const refusal = (error as { refusal?: Refusal }).refusal
    if (refusal !== undefined) return refusal
    throw error
  }
  throw new Error('attach was accepted, expected a refusal')
}

export async function pair(relay: TestRelay): Promise<{ session: Created; initiator: TestPeer; responder: TestPeer }> {
  const session = await createSession(relay)
  const url = `${relay.ws}/relay/${session.id}`
  const initiator = await attach(url, { token: session.initiator_token })
  const responder = await attach(url, { token: session.responder_token })
  return { session, initiator, responder }
}

export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** One turn of the event loop: what a tight sending loop yields so the sockets' events run. */
export const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** Resolves once `peer`'s TCP socket has written out what it held ('drain'), or the connection is closed. */
export function drained(peer: TestPeer): Promise<void> {
  const tcp = (peer.socket as unknown as { _socket?: NodeJS.EventEmitter })._socket
  return Promise.race([
    tcp === undefined ? Promise.resolve() : new Promise<void>((resolve) => tcp.once('drain', resolve)),
    peer.closed.then(() => undefined),
  ])
}

export { until } from './wait.js'

/** relay_outgoing_backlog_bytes from the relay's /metrics. */
export async function backlogGauge(relay: TestRelay): Promise<number> {
  const text = await (await fetch(`${relay.http}/metrics`)).text()
  return Number(/^relay_outgoing_backlog_bytes (\d+)$/m.exec(text)?.[1] ?? NaN)
}
