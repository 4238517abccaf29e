import { createHash, randomFillSync, timingSafeEqual } from 'node:crypto'

/** 16 bytes in base64url without padding. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{22}$/
const DIGEST_BYTES = 32

/** A new session's id and slot tokens, and the only thing the relay keeps of the tokens. */
export type Credentials = {
  id: string
  initiatorToken: string
  responderToken: string
  /** SHA-256 of the initiator token, then of the responder token: 64 bytes. */
  digests: Buffer
}

// One fill of the CSPRNG per session: 16 bytes each for the id and the two tokens.
const random = Buffer.alloc(48)

export function newCredentials(): Credentials {
  randomFillSync(random)
  const id = random.toString('base64url', 0, 16)
  const initiatorToken = random.toString('base64url', 16, 32)
  const responderToken = random.toString('base64url', 32, 48)
  random.fill(0)
  // allocUnsafe takes small buffers from a shared pool: no backing store of its own per session.
  const digests = Buffer.allocUnsafe(2 * DIGEST_BYTES)
  digestToken(initiatorToken).copy(digests, 0)
  digestToken(responderToken).copy(digests, DIGEST_BYTES)
  return { id, initiatorToken, responderToken, digests }
}

export function isWellFormedToken(token: string): boolean {
  return TOKEN_SHAPE.test(token)
}

// Only digests are kept, so a memory dump or a log line can never replay a slot token.
function digestToken(token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

/**
 * Which slot a token opens: 0 initiator, 1 responder, -1 none. Both digests are always
 * compared, in constant time, so the timing says nothing about which one, or whether any,
 * matched.
 */
export function slotOfToken(digests: Buffer, token: string): 0 | 1 | -1 {
  const digest = digestToken(token)
  const initiator = timingSafeEqual(digest, digests.subarray(0, DIGEST_BYTES))
  const responder = timingSafeEqual(digest, digests.subarray(DIGEST_BYTES))
  return initiator ? 0 : responder ? 1 : -1
}
