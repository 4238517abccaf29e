// The Prometheus HTTP API client: one `query_range` per series. Anything that keeps a series
// from coming back (no answer, a timeout, an error from Prometheus, an answer that is not a
// range result) becomes a 503 whose reason is safe to show: it never repeats the URL, which
// may carry credentials.
import { formatDuration } from '@session-relay/common/config/duration'
import { UnavailableError } from '@session-relay/common/errors'

/** `[unix seconds, value]`, as the API answers. */
export type Point = [number, number]

type RangeQuery = { query: string; startSeconds: number; endSeconds: number; stepSeconds: number }

export type PrometheusClient = {
  /** The points of the one series `query` yields; none when it yields nothing. */
  queryRange(range: RangeQuery, signal?: AbortSignal): Promise<Point[]>
}

export type PrometheusOptions = { baseUrl: string; timeoutMs: number }

// Prometheus's own error texts are short; a proxy's HTML page is not, and is cut.
const MAX_REASON_CHARS = 200

// One series of at most 11,001 points is a few hundred KiB of JSON; anything far larger is not
// an answer to these queries, and is not read into memory.
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024

export function createPrometheusClient({ baseUrl, timeoutMs }: PrometheusOptions): PrometheusClient {
  // fetch() refuses URLs with credentials: they travel as a Basic authorization header instead.
  const url = new URL(`${baseUrl}/api/v1/query_range`)
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  }
  if (url.username !== '' || url.password !== '') {
    const user = decodedOrAsIs(url.username)
    const password = decodedOrAsIs(url.password)
    headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
    url.username = ''
    url.password = ''
  }
  const endpoint = url.toString()
  // Prometheus takes whole milliseconds at most (a `1.5ms` timeout does not parse).
  const wholeMs = Math.max(1, Math.ceil(timeoutMs))

  return {
    async queryRange({ query, startSeconds, endSeconds, stepSeconds }, signal) {
      const timeout = AbortSignal.timeout(wholeMs)
      const body = new URLSearchParams({
        query,
        start: String(startSeconds),
        end: String(endSeconds),
        step: String(stepSeconds),
        // Prometheus gives up too, instead of evaluating a query nobody waits for.
        timeout: `${wholeMs}ms`,
      })
      let response: Response
      let text: string
      try {
        // POST: a form body has no URL length limit, and query_range accepts it.
        response = await fetch(endpoint, {
          method: 'POST',
          headers,
          body,
          signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
        })
        text = await readLimited(response)
      } catch (error) {
        if (error instanceof UnavailableError) throw error
        if (timeout.aborted) throw unavailable(`Prometheus did not answer within ${formatDuration(timeoutMs)}`)
        throw unavailable(`Prometheus unreachable (${networkCode(error)})`)
      }
      return pointsOf(response.status, text)
    },
  }
}

// The URL keeps userinfo percent-encoded; a stray `%` is taken literally.
function decodedOrAsIs(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

async function readLimited(response: Response): Promise<string> {
  if (response.body === null) return ''
  if (Number(response.headers.get('content-length') ?? 0) > MAX_ANSWER_BYTES) {
    await response.body.cancel()
    throw tooLarge()
  }
  const chunks: Buffer[] = []
  let size = 0
  // Node 20's types leave the stream's chunks untyped; fetch's body yields bytes.
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > MAX_ANSWER_BYTES) {
      // Leaving the loop early cancels the stream, so the connection is not read to its end.
      throw tooLarge()
    }
    chunks.push(Buffer.from(chunk))
  }
  return Buffer.concat(chunks).toString('utf8')
}

const tooLarge = (): UnavailableError =>
  unavailable(`Prometheus answered more than ${MAX_ANSWER_BYTES / (1024 * 1024)} MiB`)

const unavailable = (reason: string): UnavailableError => new UnavailableError(`metrics unavailable: ${reason}`)

// fetch() wraps the socket error: `TypeError: fetch failed` with the errno code as its cause.
function networkCode(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause
  if (typeof cause?.code === 'string') return cause.code
  if (typeof cause?.message === 'string') return cause.message.slice(0, MAX_REASON_CHARS)
  return 'connection failed'
}

type ApiAnswer = {
  status?: unknown
  error?: unknown
  errorType?: unknown
  data?: { resultType?: unknown; result?: unknown }
}

function pointsOf(status: number, text: string): Point[] {
  let answer: ApiAnswer | null = null
  try {
    answer = JSON.parse(text) as ApiAnswer
  } catch {
    // Not the Prometheus API (a proxy's error page, another service): said below.
  }
  if (answer === null || typeof answer !== 'object') {
    throw unavailable(
      status === 200 ? 'Prometheus answered something other than JSON' : `Prometheus answered ${status}`,
    )
  }
  if (answer.status !== 'success') {
    const kind = typeof answer.errorType === 'string' ? answer.errorType : 'error'
    const message = typeof answer.error === 'string' ? answer.error.slice(0, MAX_REASON_CHARS) : 'no reason given'
    throw unavailable(`Prometheus answered ${status}: ${kind}: ${message}`)
  }
  const { resultType, result } = answer.data ?? {}
  if (resultType !== 'matrix' || !Array.isArray(result))
    throw unavailable('Prometheus answered something other than a range result')
  if (result.length === 0) return []
  // Every query sums to one series; more means the query is wrong, and adding them up would hide it.
  if (result.length > 1) throw unavailable(`the query yielded ${result.length} series instead of one`)
  const values = (result[0] as { values?: unknown }).values
  if (!Array.isArray(values)) throw unavailable('Prometheus answered something other than a range result')
  const points: Point[] = []
  for (const pair of values as unknown[]) {
    if (!Array.isArray(pair) || typeof pair[0] !== 'number' || typeof pair[1] !== 'string') {
      throw unavailable('Prometheus answered something other than a range result')
    }
    const value = Number(pair[1])
    // NaN (a p95 with no requests, 0/0) and ±Inf have no JSON form: the point is a gap instead.
    if (Number.isFinite(value)) points.push([pair[0], value])
  }
  return points
}
