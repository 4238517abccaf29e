// In-process TLS (--tls-cert / --tls-key): the admin API over https, the data plane over wss,
// and nothing in clear text on the same port. The certificate is made at test time.
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import t from 'tap'
import { attach } from '../helpers/relay.js'
import type { Created } from '../helpers/relay.js'
import { startTestRelay } from '../helpers/relay.js'
import { selfSignedCertificate } from '../helpers/tls.js'

t.test('admin over https and peers over wss, with a self-signed certificate', async (t) => {
  const { certPath, keyPath, certPem } = await selfSignedCertificate(t)
  const relay = await startTestRelay(t, ['--no-auth', '--tls-cert', certPath, '--tls-key', keyPath])
  t.match(relay.http, /^https:\/\//, 'the helper gives https:// for a TLS relay')
  t.match(
    relay.logs.find((line) => line.msg === 'relay listening'),
    { port: relay.port, tls: true },
    'it logs that TLS is on',
  )

  const health = await httpsCall(`${relay.http}/healthz`, 'GET', certPem)
  t.same(health, { status: 200, body: 'ok' }, '/healthz over https')

  const created = await httpsCall(`${relay.http}/admin/sessions`, 'POST', certPem)
  t.equal(created.status, 201, 'POST /admin/sessions over https')
  const session = JSON.parse(created.body) as Created

  const url = `${relay.ws}/relay/${session.id}`
  t.match(url, /^wss:\/\//, 'peers attach over wss://')
  const initiator = await attach(url, { token: session.initiator_token, ca: certPem })
  const responder = await attach(url, { token: session.responder_token, ca: certPem })
  initiator.socket.send('hello over tls')
  responder.socket.send(Buffer.from([0, 1, 2, 255]))
  const [toResponder] = await responder.receive(1)
  const [toInitiator] = await initiator.receive(1)
  t.same([toResponder!.data.toString(), toResponder!.isBinary], ['hello over tls', false], 'initiator → responder')
  t.same([toInitiator!.data.toString('hex'), toInitiator!.isBinary], ['000102ff', true], 'responder → initiator')

  const view = await httpsCall(`${relay.http}/admin/sessions/${session.id}`, 'GET', certPem)
  t.match(
    JSON.parse(view.body),
    { state: 'open', initiator_connected: true, responder_connected: true },
    'the session is open',
  )
})

t.test('the TLS port does not speak plain http:// or ws://, nor TLS to an untrusting client', async (t) => {
  const { certPath, keyPath, certPem } = await selfSignedCertificate(t)
  const relay = await startTestRelay(t, ['--no-auth', '--tls-cert', certPath, '--tls-key', keyPath])
  const session = JSON.parse((await httpsCall(`${relay.http}/admin/sessions`, 'POST', certPem)).body) as Created
  const plain = `127.0.0.1:${relay.port}`

  const http = await httpOutcome(`http://${plain}/healthz`)
  t.notMatch(http, /^status/, `plain http:// gets no HTTP answer at all (${http})`)

  const ws = await attachOutcome(attach(`ws://${plain}/relay/${session.id}`, { token: session.initiator_token }))
  t.not(ws, 'open', `plain ws:// does not attach (${ws})`)

  const untrusted = await attachOutcome(attach(`${relay.ws}/relay/${session.id}`, { token: session.initiator_token }))
  t.match(
    untrusted,
    /^DEPTH_ZERO_SELF_SIGNED_CERT: /,
    'wss:// without the CA fails certificate verification: the certificate is self-signed',
  )

  // None of the attempts above took the slot.
  const peer = await attach(`${relay.ws}/relay/${session.id}`, { token: session.initiator_token, ca: certPem })
  t.equal(peer.socket.readyState, peer.socket.OPEN, 'the slot is still free for a proper wss:// peer')
  peer.socket.close()
})

// ---------------------------------------------------------------------------------------------

/** An https request that trusts only `ca`. */
function httpsCall(url: string, method: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { method, ca }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (chunk: string) => {
        body += chunk
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** What a plain http:// request gets: 'status N', or the error it failed with. */
function httpOutcome(url: string): Promise<string> {
  return new Promise((resolve) => {
    const req = httpRequest(url, { timeout: 3_000 }, (res) => {
      res.resume()
      resolve(`status ${res.statusCode}`)
    })
    req.on('timeout', () => req.destroy(new Error('timed out')))
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
    req.end()
  })
}

/** 'open' if the attach succeeded (the peer is then closed), else why it failed. */
async function attachOutcome(attempt: ReturnType<typeof attach>): Promise<string> {
  try {
    const peer = await attempt
    peer.socket.terminate()
    return 'open'
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException
    return code === undefined ? message : `${code}: ${message}`
  }
}
