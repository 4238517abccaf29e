// An OCI distribution client, just what pushing and pulling a Spin application needs: HEAD to
// skip blobs the registry has, monolithic upload (POST then PUT with the bytes), manifest PUT
// and GET, blob GET. Every body read is bounded and every pulled byte checked against its
// digest. Plain http only for a loopback registry or when the caller allows it.
import type { Credentials } from './auth.js'
import { basicHeader, fetchToken, parseChallenge, readBounded, readText } from './auth.js'
import { sha256Digest, verifyDigest } from './digest.js'
import { INDEX_MEDIA_TYPE, MANIFEST_MEDIA_TYPE } from './format.js'
import type { RegistryRef } from './ref.js'
import type { ArtifactStore } from './artifact-store.js'
import { isLoopbackRegistry } from './ref.js'

type RegistryOptions = {
  credentials: Credentials | null
  /** Allow plain http to a registry that is not on loopback. */
  insecure?: boolean
  /** Per request. */
  timeoutMs?: number
  maxManifestBytes?: number
}

const DEFAULT_TIMEOUT_MS = 120_000
const DEFAULT_MAX_MANIFEST_BYTES = 4 * 1024 * 1024
const MAX_ERROR_BODY_BYTES = 8 * 1024

export function registryClient(ref: RegistryRef, options: RegistryOptions): ArtifactStore {
  const scheme = isLoopbackRegistry(ref.registry) || options.insecure === true ? 'http' : 'https'
  const base = `${scheme}://${ref.registry}/v2/${ref.repository}`
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const allowHttp = scheme === 'http'
  const scope = `repository:${ref.repository}:pull,push`
  let authorization: string | null = null

  // One request, answered once more with credentials if the registry challenges it. Bodies
  // are Buffers, so the retry can resend them.
  async function send(url: string, init: RequestInit): Promise<Response> {
    const attempt = async (): Promise<Response> => {
      const headers = new Headers(init.headers)
      if (authorization !== null) headers.set('authorization', authorization)
      return fetch(url, { ...init, headers, signal: AbortSignal.timeout(timeoutMs) })
    }
    let response = await attempt()
    if (response.status !== 401) return response
    await response.body?.cancel()
    const challenge = parseChallenge(response.headers.get('www-authenticate') ?? '')
    if (challenge === null) throw new Error(`${ref.registry} refused the request (401) without a challenge`)
    if (challenge.scheme === 'basic') {
      if (options.credentials === null)
        throw new Error(`${ref.registry} needs credentials and DOCKER_CONFIG has none for it`)
      authorization = basicHeader(options.credentials)
    } else if (challenge.scheme === 'bearer') {
      authorization = `Bearer ${await fetchToken(challenge, options.credentials, scope, { allowHttp, signal: AbortSignal.timeout(timeoutMs) })}`
    } else {
      throw new Error(`${ref.registry} asked for an unsupported authentication scheme`)
    }
    response = await attempt()
    if (response.status === 401) {
      await response.body?.cancel()
      throw new Error(`${ref.registry} refused the credentials (401)`)
    }
    return response
  }

  async function failure(response: Response, what: string): Promise<Error> {
    let detail = ''
    try {
      detail = (await readText(response, MAX_ERROR_BODY_BYTES)).replace(/\s+/g, ' ').slice(0, 300)
    } catch {}
    return new Error(`${what}: ${ref.registry} answered ${response.status}${detail === '' ? '' : ` ${detail}`}`)
  }

  return {
    async hasBlob(digest) {
      const response = await send(`${base}/blobs/${digest}`, { method: 'HEAD' })
      await response.body?.cancel()
      if (response.status === 200) return true
      if (response.status === 404) return false
      throw await failure(response, `checking blob ${digest}`)
    },

    async pushBlob(bytes, digest) {
      // An empty body, not a hand-set content-length: some fetch dispatchers refuse that header.
      const started = await send(`${base}/blobs/uploads/`, { method: 'POST', body: Buffer.alloc(0) })
      if (started.status !== 202) throw await failure(started, `starting the upload of ${digest}`)
      await started.body?.cancel()
      const location = started.headers.get('location')
      if (location === null) throw new Error(`starting the upload of ${digest}: ${ref.registry} gave no Location`)
      const url = new URL(location, base)
      if (url.protocol !== `${scheme}:`)
        throw new Error(`starting the upload of ${digest}: ${ref.registry} sent the upload to ${url.protocol}`)
      url.searchParams.set('digest', digest)
      // The distribution registry answers 400 to a blob PUT without this content type.
      const done = await send(url.toString(), {
        method: 'PUT',
        body: Buffer.from(bytes),
        headers: { 'content-type': 'application/octet-stream' },
      })
      if (done.status !== 201) throw await failure(done, `uploading blob ${digest}`)
      await done.body?.cancel()
    },

    async pushManifest(bytes, mediaType, reference) {
      const response = await send(`${base}/manifests/${reference}`, {
        method: 'PUT',
        body: Buffer.from(bytes),
        headers: { 'content-type': mediaType },
      })
      if (response.status !== 201) throw await failure(response, 'pushing the manifest')
      await response.body?.cancel()
      const digest = sha256Digest(bytes)
      const told = response.headers.get('docker-content-digest')
      if (told !== null && told !== digest)
        throw new Error(`pushing the manifest: ${ref.registry} stored digest ${told}, not ${digest}`)
      return digest
    },

    async getManifest(reference) {
      const response = await send(`${base}/manifests/${reference}`, {
        headers: { accept: `${MANIFEST_MEDIA_TYPE}, ${INDEX_MEDIA_TYPE}` },
      })
      if (response.status !== 200) throw await failure(response, `pulling manifest ${reference}`)
      const bytes = await readBounded(response, options.maxManifestBytes ?? DEFAULT_MAX_MANIFEST_BYTES)
      const digest = sha256Digest(bytes)
      if (reference.startsWith('sha256:')) verifyDigest(bytes, reference, 'manifest')
      return { bytes, digest, mediaType: response.headers.get('content-type') ?? '' }
    },

    async getBlob(digest, maxBytes) {
      const response = await send(`${base}/blobs/${digest}`, {})
      if (response.status !== 200) throw await failure(response, `pulling blob ${digest}`)
      const bytes = await readBounded(response, maxBytes)
      verifyDigest(bytes, digest, `blob ${digest}`)
      return bytes
    },
  }
}
