// Calls to the control plane's API: the bearer token on each, one retry after a refresh when
// the token was refused, and every refusal turned into a sentence (the API's `{error}`).
import { currentToken } from '../auth/oidc'

const API = '/api/v1'

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

let authOn = false
let onSignedOut: () => void = () => {}

export function useAuth(on: boolean, signedOut: () => void): void {
  authOn = on
  onSignedOut = signedOut
}

async function headersWith(extra: HeadersInit | undefined, force: boolean): Promise<Headers> {
  const headers = new Headers(extra)
  if (authOn) {
    const token = await currentToken(force)
    if (token === null) {
      onSignedOut()
      throw new ApiError(401, 'you are signed out: sign in again')
    }
    headers.set('authorization', `Bearer ${token}`)
  }
  return headers
}

/** The raw answer of a request, ok or not; throws an ApiError for anything but 2xx. */
export async function send(path: string, init: RequestInit = {}): Promise<Response> {
  let res: Response
  try {
    res = await fetch(`${API}${path}`, { ...init, headers: await headersWith(init.headers, false) })
    if (res.status === 401 && authOn)
      res = await fetch(`${API}${path}`, { ...init, headers: await headersWith(init.headers, true) })
  } catch (error) {
    if (error instanceof ApiError) throw error
    if (error instanceof DOMException && error.name === 'AbortError') throw error
    throw new ApiError(0, 'the control plane cannot be reached: check your connection')
  }
  if (res.ok) return res
  const text = await res.text().catch(() => '')
  let reason = text
  try {
    const body = JSON.parse(text) as { error?: unknown }
    if (typeof body.error === 'string') reason = body.error
  } catch {}
  if (res.status === 401 && authOn) onSignedOut()
  throw new ApiError(res.status, `${describe(res.status)}: ${reason === '' ? res.statusText : reason}`)
}

function describe(status: number): string {
  switch (status) {
    case 400:
      return 'Invalid input'
    case 401:
      return 'Not signed in'
    case 403:
      return 'Not allowed'
    case 404:
      return 'Not found'
    case 409:
      return 'Conflict'
    case 413:
      return 'Too large'
    case 503:
      return 'Unavailable'
    default:
      return status >= 500 ? `Server error (${status})` : `Refused (${status})`
  }
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const res = await send(path, signal === undefined ? {} : { signal })
  return (await res.json()) as T
}

export async function sendJson<T>(method: string, path: string, body?: unknown): Promise<T | null> {
  const res = await send(
    path,
    body === undefined
      ? { method }
      : { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
  )
  return res.status === 204 ? null : ((await res.json()) as T)
}

/** Streams a text answer (a log) chunk by chunk until it ends or `signal` aborts. */
export async function streamText(path: string, signal: AbortSignal, onText: (text: string) => void): Promise<void> {
  const res = await send(path, { signal })
  if (res.body === null) return
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      onText(value)
    }
  } catch (error) {
    if (signal.aborted) return
    throw error
  }
}

export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))
