// The registry client against a registry that misbehaves: a node:http server on loopback that
// speaks the distribution protocol but answers what each test makes it answer (errors,
// challenges it cannot meet, wrong digests, bodies too big or cut short). Each failure must
// surface as the one error that names what went wrong, never a hang and never a credential.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import type { Test } from 'tap'
import { sha256Digest } from '@session-relay/spin/digest'
import { MANIFEST_MEDIA_TYPE } from '@session-relay/spin/format'
import { registryClient } from '@session-relay/spin/registry'
import type { ArtifactStore } from '@session-relay/spin/store'

type Handler = (request: http.IncomingMessage, response: http.ServerResponse) => void
type Seen = { method: string; url: string; authorization: string | undefined }

const CREDENTIALS = { username: 'builder', password: 'registry-test-password' }
const BLOB = Buffer.from('wasm bytes')
const DIGEST = sha256Digest(BLOB)

/** A registry on port 0 whose answers `handler` writes; `seen` lists what reached it. */
async function brokenRegistry(t: Test, handler: Handler): Promise<{ host: string; origin: string; seen: Seen[] }> {
  const seen: Seen[] = []
  const server = http.createServer((request, response) => {
    seen.push({ method: request.method ?? '', url: request.url ?? '', authorization: request.headers.authorization })
    request.resume()
    request.on('end', () => handler(request, response))
  })
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}`, seen }
}

function client(host: string, credentials: typeof CREDENTIALS | null = null, maxManifestBytes?: number): ArtifactStore {
  return registryClient(
    { kind: 'registry', registry: host, repository: 'apps/hello', tag: null, digest: null },
    { credentials, ...(maxManifestBytes === undefined ? {} : { maxManifestBytes }) },
  )
}

t.test('an answer that is neither yes nor no is an error naming the status and the body', async (t) => {
  const registry = await brokenRegistry(t, (request, response) => {
    if (request.url?.includes('/blobs/sha256:0')) response.writeHead(404).end()
    else response.writeHead(500, { 'content-type': 'text/plain' }).end('storage\n   driver  down')
  })
  const store = client(registry.host)
  t.equal(await store.hasBlob(`sha256:${'0'.repeat(64)}`), false, '404 means the registry lacks the blob')
  // A HEAD answer has no body to quote.
  await t.rejects(store.hasBlob(DIGEST), { message: `checking blob ${DIGEST}: ${registry.host} answered 500` })
  await t.rejects(
    store.getBlob(DIGEST, 1024),
    { message: `pulling blob ${DIGEST}: ${registry.host} answered 500 storage driver down` },
    'white space in the body is folded',
  )
})

t.test('an error body too big to read is left out of the message', async (t) => {
  const registry = await brokenRegistry(t, (_request, response) => {
    response.writeHead(503, { 'content-length': String(64 * 1024) }).end(Buffer.alloc(64 * 1024, 'x'))
  })
  await t.rejects(client(registry.host).getBlob(DIGEST, 1024), {
    message: `pulling blob ${DIGEST}: ${registry.host} answered 503`,
  })
})

t.test('401 challenges', async (t) => {
  t.test('without a challenge', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(401).end()
    })
    await t.rejects(client(registry.host, CREDENTIALS).hasBlob(DIGEST), {
      message: `${registry.host} refused the request (401) without a challenge`,
    })
  })

  t.test('Basic with no credentials for the registry', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(401, { 'www-authenticate': 'Basic realm="registry"' }).end()
    })
    await t.rejects(client(registry.host, null).hasBlob(DIGEST), {
      message: `${registry.host} needs credentials and DOCKER_CONFIG has none for it`,
    })
    t.equal(registry.seen.length, 1, 'nothing is retried without credentials')
  })

  t.test('Basic credentials refused', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(401, { 'www-authenticate': 'Basic realm="registry"' }).end()
    })
    const failure = await client(registry.host, CREDENTIALS)
      .hasBlob(DIGEST)
      .then(
        () => null,
        (error: Error) => error,
      )
    t.equal(failure?.message, `${registry.host} refused the credentials (401)`)
    t.equal(registry.seen.length, 2, 'asked once more, with the credentials')
    t.equal(
      registry.seen[1]?.authorization,
      `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString('base64')}`,
    )
  })

  t.test('Basic credentials accepted are kept for the next request', async (t) => {
    const expected = `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString('base64')}`
    const registry = await brokenRegistry(t, (request, response) => {
      if (request.headers.authorization !== expected)
        response.writeHead(401, { 'www-authenticate': 'Basic realm="registry"' }).end()
      else response.writeHead(200).end()
    })
    const store = client(registry.host, CREDENTIALS)
    t.equal(await store.hasBlob(DIGEST), true)
    t.equal(await store.hasBlob(DIGEST), true)
    t.same(
      registry.seen.map((request) => request.authorization),
      [undefined, expected, expected],
    )
  })

  t.test('an unsupported scheme', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(401, { 'www-authenticate': 'Negotiate' }).end()
    })
    await t.rejects(client(registry.host, CREDENTIALS).hasBlob(DIGEST), {
      message: `${registry.host} asked for an unsupported authentication scheme`,
    })
  })

  t.test('Bearer without a realm', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(401, { 'www-authenticate': 'Bearer service="registry"' }).end()
    })
    await t.rejects(client(registry.host, CREDENTIALS).hasBlob(DIGEST), {
      message: 'the registry asked for a Bearer token without naming a realm',
    })
  })

  t.test('Bearer with a realm that is not http(s)', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(401, { 'www-authenticate': 'Bearer realm="ftp://127.0.0.1/token"' }).end()
    })
    await t.rejects(client(registry.host, CREDENTIALS).hasBlob(DIGEST), {
      message: 'the token realm ftp://127.0.0.1 is not https',
    })
  })
})

t.test('a token service that fails', async (t) => {
  // The registry challenges until it sees a bearer token, then answers 200.
  async function withTokenService(
    t: Test,
    answer: Handler,
  ): Promise<{
    registry: Awaited<ReturnType<typeof brokenRegistry>>
    tokens: Awaited<ReturnType<typeof brokenRegistry>>
  }> {
    const tokens = await brokenRegistry(t, answer)
    const registry = await brokenRegistry(t, (request, response) => {
      if (request.headers.authorization?.startsWith('Bearer ') === true) response.writeHead(200).end()
      else response.writeHead(401, { 'www-authenticate': `Bearer realm="${tokens.origin}/token",service="test"` }).end()
    })
    return { registry, tokens }
  }

  t.test('with an error status', async (t) => {
    const { registry, tokens } = await withTokenService(t, (_request, response) => {
      response.writeHead(500).end('{"token":"not-this"}')
    })
    await t.rejects(client(registry.host, CREDENTIALS).hasBlob(DIGEST), {
      message: `the token service at ${tokens.origin} answered 500`,
    })
  })

  t.test('with something that is not JSON', async (t) => {
    const { registry, tokens } = await withTokenService(t, (_request, response) => {
      response.writeHead(200).end('<html>')
    })
    await t.rejects(client(registry.host, CREDENTIALS).hasBlob(DIGEST), {
      message: `the token service at ${tokens.origin} answered something that is not JSON`,
    })
  })

  t.test('with JSON and no token', async (t) => {
    const { registry, tokens } = await withTokenService(t, (_request, response) => {
      response.writeHead(200).end('{"token":""}')
    })
    await t.rejects(client(registry.host, CREDENTIALS).hasBlob(DIGEST), {
      message: `the token service at ${tokens.origin} gave no token`,
    })
  })

  t.test('an OAuth-style access_token is used, asked for anonymously without credentials', async (t) => {
    const { registry, tokens } = await withTokenService(t, (_request, response) => {
      response.writeHead(200).end('{"access_token":"abc"}')
    })
    t.equal(await client(registry.host, null).hasBlob(DIGEST), true)
    t.equal(tokens.seen[0]?.authorization, undefined)
    t.equal(tokens.seen[0]?.url, '/token?service=test&scope=repository%3Aapps%2Fhello%3Apull%2Cpush')
    t.equal(registry.seen.at(-1)?.authorization, 'Bearer abc')
  })
})

t.test('pushing a blob to a registry that breaks the upload protocol', async (t) => {
  t.test('the upload is not started', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(403).end('{"errors":[{"code":"DENIED"}]}')
    })
    await t.rejects(client(registry.host).pushBlob(BLOB, DIGEST), {
      message: `starting the upload of ${DIGEST}: ${registry.host} answered 403 {"errors":[{"code":"DENIED"}]}`,
    })
  })

  t.test('202 without a Location', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(202).end()
    })
    await t.rejects(client(registry.host).pushBlob(BLOB, DIGEST), {
      message: `starting the upload of ${DIGEST}: ${registry.host} gave no Location`,
    })
  })

  t.test('a Location on another scheme', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(202, { location: 'https://127.0.0.1/upload/1' }).end()
    })
    await t.rejects(client(registry.host).pushBlob(BLOB, DIGEST), {
      message: `starting the upload of ${DIGEST}: ${registry.host} sent the upload to https:`,
    })
    t.equal(registry.seen.length, 1, 'the bytes go nowhere')
  })

  t.test('the PUT refused', async (t) => {
    const registry = await brokenRegistry(t, (request, response) => {
      if (request.method === 'POST')
        response.writeHead(202, { location: '/v2/apps/hello/blobs/uploads/1?state=x' }).end()
      else response.writeHead(400).end('{"errors":[{"code":"DIGEST_INVALID"}]}')
    })
    await t.rejects(client(registry.host).pushBlob(BLOB, DIGEST), {
      message: `uploading blob ${DIGEST}: ${registry.host} answered 400 {"errors":[{"code":"DIGEST_INVALID"}]}`,
    })
    t.equal(
      registry.seen[1]?.url,
      `/v2/apps/hello/blobs/uploads/1?state=x&digest=${encodeURIComponent(DIGEST)}`,
      'the digest joins the upload URL',
    )
  })
})

t.test('pushing a manifest', async (t) => {
  const manifest = Buffer.from('{"schemaVersion":2}')
  t.test('refused', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(400).end('MANIFEST_INVALID')
    })
    await t.rejects(client(registry.host).pushManifest(manifest, MANIFEST_MEDIA_TYPE, 'v1'), {
      message: `pushing the manifest: ${registry.host} answered 400 MANIFEST_INVALID`,
    })
  })

  t.test('stored under another digest than the bytes sent', async (t) => {
    const other = sha256Digest(Buffer.from('other'))
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(201, { 'docker-content-digest': other }).end()
    })
    await t.rejects(client(registry.host).pushManifest(manifest, MANIFEST_MEDIA_TYPE, 'v1'), {
      message: `pushing the manifest: ${registry.host} stored digest ${other}, not ${sha256Digest(manifest)}`,
    })
  })
})

t.test('pulling from a registry that sends the wrong bytes', async (t) => {
  t.test('a manifest that is not there', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(404).end('{"errors":[{"code":"MANIFEST_UNKNOWN"}]}')
    })
    await t.rejects(client(registry.host).getManifest('v1'), {
      message: `pulling manifest v1: ${registry.host} answered 404 {"errors":[{"code":"MANIFEST_UNKNOWN"}]}`,
    })
  })

  t.test('a manifest declared bigger than allowed', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(200, { 'content-length': '2048' }).end(Buffer.alloc(2048, ' '))
    })
    await t.rejects(client(registry.host, null, 1024).getManifest('v1'), {
      message: 'response of 2048 bytes is larger than the 1024 allowed',
    })
  })

  t.test('a manifest streamed past the limit without a length', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(200, { 'transfer-encoding': 'chunked' })
      response.write(Buffer.alloc(800, ' '))
      response.end(Buffer.alloc(800, ' '))
    })
    await t.rejects(client(registry.host, null, 1024).getManifest('v1'), {
      message: 'response larger than the 1024 bytes allowed',
    })
  })

  t.test('a manifest pulled by digest whose bytes hash to another', async (t) => {
    const asked = sha256Digest(Buffer.from('the manifest asked for'))
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(200).end('{"schemaVersion":2}')
    })
    await t.rejects(client(registry.host).getManifest(asked), {
      message: `manifest: content does not match its digest ${asked} (got ${sha256Digest(Buffer.from('{"schemaVersion":2}'))})`,
    })
  })

  t.test('a manifest with no content type', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.removeHeader('content-type')
      response.writeHead(200).end('{}')
    })
    t.equal((await client(registry.host).getManifest('v1')).mediaType, '')
  })

  t.test('a truncated blob', async (t) => {
    const registry = await brokenRegistry(t, (_request, response) => {
      response.writeHead(200, { 'transfer-encoding': 'chunked' }).end(BLOB.subarray(0, 4))
    })
    await t.rejects(client(registry.host).getBlob(DIGEST, 1024), {
      message: `blob ${DIGEST}: content does not match its digest ${DIGEST} (got ${sha256Digest(BLOB.subarray(0, 4))})`,
    })
  })
})
