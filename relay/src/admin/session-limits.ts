// The optional body of POST /admin/sessions: limits the admin caller sets on the session, within
// the node's maxima. Other fields are ignored, as before there were any.
import { HttpError } from '../errors.js'
import type { SessionLimits } from '../session/session.js'

export type LimitPolicy = {
  /** When the body sets none; null: unlimited (or maxBytes, when that is set). */
  defaultMaxBytes: number | null
  /** The most a body may ask for; null: no maximum. */
  maxMaxBytes: number | null
  /** Bytes per second per direction when the body sets none; null: unlimited (or maxRate, when that is set). */
  defaultRate: number | null
  /** The highest rate a body may ask for; null: no maximum. */
  maxRate: number | null
  /** The node's session TTL: the default, and the longest a body may ask for. */
  ttlMs: number
}

/** The session's limits from the request body (null or empty: the defaults); a 400 names what is wrong. */
export function limitsOf(body: Buffer | null, policy: LimitPolicy): SessionLimits {
  const fields = body === null || body.length === 0 ? {} : jsonObject(body)
  const maxBytes = bounded(fields.max_bytes, 'max_bytes', policy.defaultMaxBytes, policy.maxMaxBytes)
  const bytesPerSecond = bounded(fields.bytes_per_second, 'bytes_per_second', policy.defaultRate, policy.maxRate)
  let ttlMs = policy.ttlMs
  if (fields.ttl_seconds !== undefined) {
    ttlMs = positiveInteger(fields.ttl_seconds, 'ttl_seconds') * 1000
    if (ttlMs > policy.ttlMs)
      throw new HttpError(
        400,
        `ttl_seconds ${ttlMs / 1000} is above this relay's session TTL, ${policy.ttlMs / 1000} s`,
      )
  }
  return { maxBytes, bytesPerSecond, ttlMs }
}

/** A field the node gives a default and a maximum: the default when absent, else at most the maximum. */
function bounded(value: unknown, name: string, defaultValue: number | null, max: number | null): number | null {
  const chosen = value === undefined ? (defaultValue ?? max) : positiveInteger(value, name)
  if (chosen !== null && max !== null && chosen > max)
    throw new HttpError(400, `${name} ${chosen} is above this relay's maximum, ${max}`)
  return chosen
}

function jsonObject(body: Buffer): Record<string, unknown> {
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

function positiveInteger(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new HttpError(400, `${name} must be a positive integer`)
  }
  return value
}
