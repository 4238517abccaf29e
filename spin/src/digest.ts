// Content digests as OCI names them: `sha256:` and 64 lowercase hex digits. Only sha256 is
// accepted; it is what every Spin artifact and the distribution registry use.
import { createHash } from 'node:crypto'

const DIGEST = /^sha256:[a-f0-9]{64}$/

export function sha256Digest(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`
}

export function isDigest(text: string): boolean {
  return DIGEST.test(text)
}

/** Throws unless `bytes` hash to `digest`: content from a registry or a directory is untrusted. */
export function verifyDigest(bytes: Uint8Array, digest: string, what: string): void {
  if (!isDigest(digest)) throw new Error(`${what}: ${JSON.stringify(digest)} is not a sha256 digest`)
  const actual = sha256Digest(bytes)
  if (actual !== digest) throw new Error(`${what}: content does not match its digest ${digest} (got ${actual})`)
}
