// The optional body of POST /admin/sessions: limits the admin caller sets on the session, within
// the node's maxima. Other fields are ignored, as before there were any.
import { HttpError } from '../errors.js'
import type { SessionLimits } from '../session/session.js'

export type LimitPolicy = {
  /** When the body sets none; null: unlimited (or maxBytes, when that is set). */
  defaultMaxBytes: number | null
  /** The most a body may ask for; null: no maximum. */
  maxMaxBytes: number | null
  /** The node's session TTL: the default, and the longest a body may ask for. */
  ttlMs: number
}

/** The session's limits from the request body (null or empty: the defaults); a 400 names what is wrong. */
export function limitsOf (body: Buffer | null, policy: LimitPolicy): SessionLimits {
  const fields = body === null || body.length === 0 ? {} : jsonObject(body)
  const defaultBytes = policy.defaultMaxBytes ?? policy.maxMaxBytes
  const maxBytes = fields.max_bytes === undefined ? defaultBytes : positiveInteger(fields.max_bytes, 'max_bytes')
  if (maxBytes !== null && policy.maxMaxBytes !== null && maxBytes > policy.maxMaxBytes) {
    throw new HttpError(400, `max_bytes ${maxBytes} is above this relay's maximum, ${policy.maxMaxBytes}`)
  }
  let ttlMs = policy.ttlMs
  if (fields.ttl_seconds !== undefined) {
    ttlMs = positiveInteger(fields.ttl_seconds, 'ttl_seconds') * 1000
    if (ttlMs > policy.ttlMs) throw new HttpError(400, `ttl_seconds ${ttlMs / 1000} is above this relay's session TTL, ${policy.ttlMs / 1000} s`)
  }
  return { maxBytes, ttlMs }
}

function jsonObject (body: Buffer): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(body.toString('utf8'))
  } catch {
    throw new HttpError(400, 'request body is not valid JSON')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new HttpError(400, 'request body must be a JSON object')
  }
  return value as Record<string, unknown>
}

function positiveInteger (value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new HttpError(400, `${name} must be a positive integer`)
  }
  return value
}
