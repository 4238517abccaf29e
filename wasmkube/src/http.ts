// The control plane's API as the CLI uses it. Every answer is read with a cap on its size and
// a deadline, so a hostile or broken server (a body of gigabytes, garbage instead of JSON,
// silence) ends in a WasmkubeError, never in a crash or unbounded memory.
import { WasmkubeError } from './errors.js'

/** Largest JSON answer read: an application with its builds is a few KiB, an invoke result under 1.5 MiB. */
export const MAX_JSON_BYTES = 4 * 1024 * 1024
const MAX_ERROR_BYTES = 64 * 1024
/** The server gives an invoke 30 s; anything else answers at once. */
const REQUEST_TIMEOUT_MS = 60_000

export type Api = {
  server: string
  json<T>(method: string, path: string, body?: unknown): Promise<T>
  /** A text/plain stream (a log), handed over chunk by chunk as it arrives. */
  stream(path: string, onChunk: (chunk: Uint8Array) => void, signal?: AbortSignal): Promise<void>
}

export function createApi(server: string, token: () => Promise<string | undefined>): Api {
  const base = `${server.replace(/\/+$/, '')}/api/v1`

  async function send(method: string, path: string, body: unknown, signal: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' }
    const bearer = await token()
    if (bearer !== undefined) headers.authorization = `Bearer ${bearer}`
    if (body !== undefined) headers['content-type'] = 'application/json'
    let response: Response
    try {
      response = await fetch(`${base}${path}`, {
        method,
        headers,
        signal,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    } catch (cause) {
      throw new WasmkubeError('network', `cannot reach ${server}: ${(cause as Error).message}`, { cause })
    }
    if (!response.ok) throw await refusal(response, bearer !== undefined)
    return response
  }

  return {
    server,
    async json<T>(method: string, path: string, body?: unknown): Promise<T> {
      const response = await send(method, path, body, AbortSignal.timeout(REQUEST_TIMEOUT_MS))
      if (response.status === 204) {
        await response.body?.cancel()
        return undefined as T
      }
      const text = await readBounded(response, MAX_JSON_BYTES)
      try {
        return JSON.parse(text) as T
      } catch {
        throw new WasmkubeError(
          'bad_answer',
          `the server's answer to ${method} ${path} is not JSON: ${printable(text.slice(0, 80))}`,
        )
      }
    },
    async stream(path, onChunk, signal) {
      const response = await send('GET', path, undefined, signal ?? new AbortController().signal)
      if (response.body === null) return
      try {
        for await (const chunk of chunksOf(response.body)) onChunk(chunk)
      } catch (cause) {
        if (signal?.aborted === true) return
        throw new WasmkubeError('network', `the stream from ${server} broke off: ${(cause as Error).message}`, {
          cause,
        })
      }
    },
  }
}

/** The body as text, or a bad_answer error past `max` bytes (the rest is not read). */
async function readBounded(response: Response, max: number): Promise<string> {
  const declared = Number(response.headers.get('content-length'))
  if (Number.isFinite(declared) && declared > max) {
    await response.body?.cancel()
    throw tooLarge(max)
  }
  const chunks: Uint8Array[] = []
  let size = 0
  if (response.body !== null) {
    try {
      for await (const chunk of chunksOf(response.body)) {
        size += chunk.byteLength
        if (size > max) {
          await response.body.cancel().catch(() => {})
          throw tooLarge(max)
        }
        chunks.push(chunk)
      }
    } catch (cause) {
      if (cause instanceof WasmkubeError) throw cause
      throw new WasmkubeError('network', `the answer broke off: ${(cause as Error).message}`, { cause })
    }
  }
  return Buffer.concat(chunks).toString('utf8')
}

// Node's fetch body is an async iterable of bytes; the DOM-less lib types do not say so.
const chunksOf = (body: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> => body

const tooLarge = (max: number) =>
  new WasmkubeError('bad_answer', `the server's answer is larger than ${max} bytes: not read`)

/** What the server said, as the API's {"error": reason} or the first line of whatever came. */
async function refusal(response: Response, hadToken: boolean): Promise<WasmkubeError> {
  let text = ''
  try {
    text = await readBounded(response, MAX_ERROR_BYTES)
  } catch {}
  let reason = printable(text.slice(0, 200)).trim()
  try {
    const body = JSON.parse(text) as { error?: unknown }
    if (typeof body.error === 'string') reason = printable(body.error)
  } catch {}
  let hint = ''
  if (response.status === 401)
    hint = hadToken ? ' (log in again: wasmkube login)' : ' (log in with wasmkube login, or set WASMKUBE_TOKEN)'
  return new WasmkubeError('refused', `${response.status} ${reason === '' ? response.statusText : reason}${hint}`, {
    status: response.status,
  })
}

// A hostile server must not write terminal escapes through our error messages.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const printable = (text: string): string => text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '?')
