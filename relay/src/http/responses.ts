import { STATUS_CODES } from 'node:http'
import { HttpError } from '../errors.js'
import type { Answered } from '../tracing/hooks.js'
import type { HttpResponse } from './uws.js'

export type Headers = Record<string, string>

const JSON_TYPE = 'application/json'

export { bearerCredentials } from '@session-relay/auth/verify-bearer'

export function statusLine(status: number): string {
  return `${status} ${STATUS_CODES[status] ?? 'Unknown'}`
}

/**
 * Write a whole response in one corked write. Safe to call after an await: a response the
 * client aborted meanwhile is skipped.
 */
export function send(res: HttpResponse, status: number, body: string, headers: Headers): void {
  if (isAborted(res)) return
  answer(res, status)
  res.cork(() => {
    res.writeStatus(statusLine(status))
    for (const name in headers) res.writeHeader(name, headers[name] as string)
    if (status === 204) res.endWithoutBody()
    else res.end(body)
  })
}

export function sendJson(res: HttpResponse, status: number, value: unknown, headers: Headers = {}): void {
  send(res, status, JSON.stringify(value), { 'content-type': JSON_TYPE, ...headers })
}

export function sendError(res: HttpResponse, error: HttpError, headers: Headers = {}): void {
  sendJson(res, error.status, { error: error.message }, { ...headers, ...error.headers })
}

/** Mark the response aborted; uWS forbids touching it afterwards. */
export function trackAbort(res: HttpResponse): void {
  res.onAborted(() => {
    ;(res as Marks).aborted = true
    answer(res, null)
  })
}

/** Tell `answered` the status the response is sent with, or null if it is aborted first (http/traced.ts). */
export function onAnswered(res: HttpResponse, answered: Answered): void {
  ;(res as Marks).answered = answered
}

function answer(res: HttpResponse, status: number | null): void {
  const answered = (res as Marks).answered
  if (answered === undefined) return
  ;(res as Marks).answered = undefined
  answered(status)
}

function isAborted(res: HttpResponse): boolean {
  return (res as Marks).aborted === true
}

type Marks = HttpResponse & { aborted?: boolean; answered?: Answered | undefined }

/**
 * Read a request body up to `limit` bytes. Must be called before the handler returns, since
 * uWS hands body chunks only to a callback registered synchronously.
 */
export function readBody(res: HttpResponse, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    let failed = false
    res.onData((chunk, isLast) => {
      if (failed) return
      size += chunk.byteLength
      if (size > limit) {
        failed = true
        reject(new HttpError(413, `request body larger than ${limit} bytes`))
        return
      }
      // uWS reuses the chunk's memory after the callback: copy.
      chunks.push(Buffer.from(new Uint8Array(chunk)))
      if (isLast) resolve(Buffer.concat(chunks, size))
    })
  })
}

/** 405 with `Allow`, for a known path asked with another method. */
export function methodNotAllowed(allow: string) {
  return (res: HttpResponse): void => sendError(res, new HttpError(405, 'method not allowed', { allow }))
}
