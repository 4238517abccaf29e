// An OCI image-layout directory (image-spec layout.md: `oci-layout`, `index.json`,
// `blobs/sha256/<hex>`), the artifact store when there is no registry. Tags are the index's
// `org.opencontainers.image.ref.name` annotations. Blobs are written to a temporary name and
// renamed, and index.json is rewritten under a lock directory, so concurrent builders and
// readers never see half a file.
import { randomUUID } from 'node:crypto'
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { isDigest, sha256Digest, verifyDigest } from './digest.js'
import type { Descriptor } from './format.js'
import { INDEX_MEDIA_TYPE } from './format.js'
import type { ArtifactStore } from './artifact-store.js'

const REF_NAME = 'org.opencontainers.image.ref.name'
const LOCK_WAIT_MS = 10_000

type Index = { schemaVersion: 2; mediaType?: string; manifests: Descriptor[] }

export function layoutStore(dir: string): ArtifactStore {
  const blobPath = (digest: string): string => {
    if (!isDigest(digest)) throw new Error(`${JSON.stringify(digest)} is not a sha256 digest`)
    return join(dir, 'blobs', 'sha256', digest.slice('sha256:'.length))
  }

  async function writeBlob(bytes: Uint8Array, digest: string): Promise<void> {
    const path = blobPath(digest)
    await mkdir(join(dir, 'blobs', 'sha256'), { recursive: true })
    const temporary = `${path}.${randomUUID()}.tmp`
    await writeFile(temporary, bytes)
    await rename(temporary, path)
  }

  async function readIndex(): Promise<Index> {
    try {
      return JSON.parse(await readFile(join(dir, 'index.json'), 'utf8')) as Index
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT')
        return { schemaVersion: 2, mediaType: INDEX_MEDIA_TYPE, manifests: [] }
      throw error
    }
  }

  async function withLock<T>(work: () => Promise<T>): Promise<T> {
    const lock = join(dir, 'index.json.lock')
    const deadline = Date.now() + LOCK_WAIT_MS
    for (;;) {
      try {
        await mkdir(lock)
        break
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
        if (Date.now() > deadline)
          throw new Error(`${lock} is held for more than ${LOCK_WAIT_MS} ms: remove it if no build runs`)
        await delay(20)
      }
    }
    try {
      return await work()
    } finally {
      await rm(lock, { recursive: true, force: true })
    }
  }

  return {
    async hasBlob(digest) {
      try {
        await stat(blobPath(digest))
        return true
      } catch {
        return false
      }
    },

    async pushBlob(bytes, digest) {
      verifyDigest(bytes, digest, 'blob')
      await writeBlob(bytes, digest)
    },

    async pushManifest(bytes, mediaType, reference) {
      const digest = sha256Digest(bytes)
      await mkdir(dir, { recursive: true })
      await writeFile(join(dir, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}')
      await writeBlob(bytes, digest)
      await withLock(async () => {
        const index = await readIndex()
        const tag = isDigest(reference) ? null : reference
        const kept = index.manifests.filter((entry) =>
          tag === null ? entry.digest !== digest : entry.annotations?.[REF_NAME] !== tag,
        )
        const entry: Descriptor = { mediaType, digest, size: bytes.length }
        if (tag !== null) entry.annotations = { [REF_NAME]: tag }
        const next: Index = { schemaVersion: 2, mediaType: INDEX_MEDIA_TYPE, manifests: [...kept, entry] }
        const temporary = join(dir, `index.json.${randomUUID()}.tmp`)
        await writeFile(temporary, JSON.stringify(next, null, 2))
        await rename(temporary, join(dir, 'index.json'))
      })
      return digest
    },

    async getManifest(reference) {
      let digest = reference
      let mediaType = ''
      if (!isDigest(reference)) {
        const index = await readIndex()
        const entry = index.manifests.find((candidate) => candidate.annotations?.[REF_NAME] === reference)
        if (entry === undefined) throw new Error(`no manifest tagged ${JSON.stringify(reference)} in ${dir}`)
        digest = entry.digest
        mediaType = entry.mediaType
      }
      const bytes = await readBlob(digest, MAX_MANIFEST_BYTES)
      return { bytes, digest, mediaType }
    },

    async getBlob(digest, maxBytes) {
      return readBlob(digest, maxBytes)
    },
  }

  async function readBlob(digest: string, maxBytes: number): Promise<Buffer> {
    const path = blobPath(digest)
    let size: number
    try {
      size = (await stat(path)).size
    } catch {
      throw new Error(`blob ${digest} is not in ${dir}`)
    }
    if (size > maxBytes) throw new Error(`blob ${digest} is ${size} bytes, more than the ${maxBytes} allowed`)
    const bytes = await readFile(path)
    verifyDigest(bytes, digest, `blob ${digest}`)
    return bytes
  }
}

const MAX_MANIFEST_BYTES = 4 * 1024 * 1024
