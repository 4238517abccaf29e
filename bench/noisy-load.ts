// What bench:noisy sends: a well-behaved neighbour's requests, timed, and the three kinds of
// noise issue 40 names (a flood of requests that hold their instance, memory hogs, CPU hogs).
import http from 'node:http'
import { connect } from 'node:net'
import type { Socket } from 'node:net'

const elapsedMs = (since: bigint): number => Number(process.hrtime.bigint() - since) / 1e6

export type Timed = { latenciesMs: number[]; failed: number; reasons: Record<string, number> }

/** One GET on `agent`: its status, or the error's code; a request longer than `timeoutMs` fails. */
function get(agent: http.Agent, url: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const request = http.get(url, { agent, timeout: timeoutMs }, (response) => {
      response.resume()
      response.on('end', () => resolve(String(response.statusCode)))
      response.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
    })
    request.on('timeout', () => request.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })))
    request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
  })
}

/**
 * `clients` loops of sequential GETs of `url` for `durationMs`: every request's latency, and
 * those that did not answer 200 (by status or error code).
 */
export async function timed(url: string, clients: number, durationMs: number): Promise<Timed> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients })
  const result: Timed = { latenciesMs: [], failed: 0, reasons: {} }
  const until = Date.now() + durationMs
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < until) {
        const started = process.hrtime.bigint()
        const status = await get(agent, url, 35_000)
        result.latenciesMs.push(elapsedMs(started))
        if (status !== '200') {
          result.failed++
          result.reasons[status] = (result.reasons[status] ?? 0) + 1
        }
      }
    }),
  )
  agent.destroy()
  return result
}

/** `clients` loops of GETs of `url` until `stop` resolves (each answer awaited): the statuses counted. */
export async function hammer(url: string, clients: number, stop: Promise<void>): Promise<Record<string, number>> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients })
  const statuses: Record<string, number> = {}
  let stopped = false
  void stop.then(() => (stopped = true))
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (!stopped) {
        const status = await get(agent, url, 60_000)
        statuses[status] = (statuses[status] ?? 0) + 1
      }
    }),
  )
  agent.destroy()
  return statuses
}

export type Flood = {
  /** Resolves once every request has been sent (the worker holds, queues or refuses each). */
  sent: Promise<void>
  /** Sends each held request the rest of its body and counts the answers by status. */
  finish: () => Promise<Record<string, number>>
}

/**
 * `count` requests at once to the probe's `POST /echo`, each promising ten bytes and sending
 * five: a running one holds its instance (as a handler awaiting a timer does) until `finish`.
 */
export function flood(url: URL, count: number): Flood {
  const answers: Array<Promise<string>> = []
  const sockets: Socket[] = []
  const connected: Array<Promise<void>> = []
  for (let i = 0; i < count; i++) {
    const socket = connect(Number(url.port), '127.0.0.1')
    sockets.push(socket)
    let text = ''
    socket.setEncoding('latin1').on('data', (chunk: string) => (text += chunk))
    socket.on('error', () => {})
    answers.push(
      new Promise((resolve) => socket.on('close', () => resolve(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 'no answer'))),
    )
    connected.push(
      new Promise((resolve) =>
        socket.write(
          `POST /echo HTTP/1.1\r\nhost: ${url.host}\r\nconnection: close\r\ncontent-length: 10\r\n\r\n12345`,
          () => resolve(),
        ),
      ),
    )
  }
  return {
    sent: Promise.all(connected).then(() => {}),
    finish: async () => {
      for (const socket of sockets) if (!socket.destroyed) socket.write('67890')
      const counts: Record<string, number> = {}
      for (const status of await Promise.all(answers)) counts[status] = (counts[status] ?? 0) + 1
      return counts
    },
  }
}
