import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

const TOKEN_BYTES = 16
const SESSION_ID_BYTES = 16
/** 16 bytes in base64url without padding. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{22}$/

export function newSlotToken (): string {
  return randomBytes(TOKEN_BYTES).toString('base64url')
}

export function newSessionId (): string {
  return randomBytes(SESSION_ID_BYTES).toString('base64url')
}

export function isWellFormedToken (token: string): boolean {
  return TOKEN_SHAPE.test(token)
}

// Only digests are kept, so a memory dump or a log line can never replay a slot token.
export function digestToken (token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

export function sameDigest (a: Buffer, b: Buffer): boolean {
  return timingSafeEqual(a, b)
}
