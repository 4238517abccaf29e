// Same-origin on a live relay compares the scheme too: a page on http://host is not the origin
// of a relay on https://host, nor the other way round (Host carries no scheme).
import { request as httpsRequest } from 'node:https'
import t from 'tap'
import { attach, createSession, refusalOf, startTestRelay } from '../helpers/relay.js'
import { selfSignedCertificate } from '../helpers/tls.js'

t.test('a plain-http relay: an https page on its host and port is not same-origin', async (t) => {
  const relay = await startTestRelay(t)
  const session = await createSession(relay)
  const url = `${relay.ws}/relay/${session.id}`
  const refusal = await refusalOf(
    attach(url, { token: session.initiator_token, origin: `https://127.0.0.1:${relay.port}` }),
  )
  t.equal(refusal.status, 403, 'attach from https://host:port refused')
  t.same(refusal.body, { error: 'origin not allowed' })
  const cors = await fetch(`${relay.http}/admin/sessions`, { headers: { origin: `https://127.0.0.1:${relay.port}` } })
  t.equal(cors.headers.get('access-control-allow-origin'), null, 'no CORS grant for https://host:port')
  const peer = await attach(url, { token: session.initiator_token, origin: `http://127.0.0.1:${relay.port}` })
  t.equal(peer.socket.readyState, peer.socket.OPEN, 'http://host:port still is')
})

t.test('a TLS relay: an http page on its host and port is not same-origin', async (t) => {
  const { certPath, keyPath, certPem } = await selfSignedCertificate(t)
  const relay = await startTestRelay(t, ['--no-auth', '--tls-cert', certPath, '--tls-key', keyPath])
  const url = `${relay.ws}/relay/`
  // fetch cannot be told to trust one CA.
  const created = await new Promise<{ id: string; initiator_token: string }>((resolve, reject) => {
    const req = httpsRequest(`${relay.http}/admin/sessions`, { method: 'POST', ca: certPem }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (chunk: string) => {
        body += chunk
      })
      res.on('end', () => resolve(JSON.parse(body) as { id: string; initiator_token: string }))
    })
    req.on('error', reject)
    req.end()
  })
  const refusal = await refusalOf(
    attach(url + created.id, { token: created.initiator_token, ca: certPem, origin: `http://127.0.0.1:${relay.port}` }),
  )
  t.equal(refusal.status, 403, 'attach from http://host:port refused')
  t.same(refusal.body, { error: 'origin not allowed' })
  const peer = await attach(url + created.id, {
    token: created.initiator_token,
    ca: certPem,
    origin: `https://127.0.0.1:${relay.port}`,
  })
  t.equal(peer.socket.readyState, peer.socket.OPEN, 'https://host:port still is')
})

t.test("behind a TLS-terminating proxy the wss:// public base URL makes https the relay's scheme", async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--public-base-url', 'wss://relay.example.test'])
  const session = await createSession(relay)
  const url = `${relay.ws}/relay/${session.id}`
  const refusal = await refusalOf(
    attach(url, { token: session.initiator_token, origin: `http://127.0.0.1:${relay.port}` }),
  )
  t.equal(refusal.status, 403, "http://host:port refused: the relay's pages are https")
  const peer = await attach(url, { token: session.initiator_token, origin: `https://127.0.0.1:${relay.port}` })
  t.equal(peer.socket.readyState, peer.socket.OPEN, 'https://host:port allowed')
})
