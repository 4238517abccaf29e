// A minimal OpenID issuer for benchmarks: discovery document and key set on loopback, and
// real RS256 tokens signed with its key. The relay verifies these exactly as it would a real
// provider's; only what the relay fetches is served (no login, no token endpoint behind the URL).
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'

export type Issuer = {
  /** The issuer URL, as in the tokens' `iss` and the relay's --oidc-issuer. */
  url: string
  /** A signed access token for `audience` with the given scopes, valid for an hour. */
  mint(audience: string, scope: string): Promise<string>
  close(): Promise<void>
}

const KID = 'bench'

export async function startIssuer(): Promise<Issuer> {
  // Extractable, or jose cannot export the public half as a JWK.
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true })
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: KID, alg: 'RS256', use: 'sig' }] })
  let discovery = ''

  const server = createServer((req, res) => {
    const body = req.url === '/.well-known/openid-configuration' ? discovery : req.url === '/jwks' ? jwks : null
    if (req.method !== 'GET' || body === null) return void res.writeHead(404).end()
    res.writeHead(200, { 'content-type': 'application/json' }).end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  discovery = JSON.stringify({
    issuer: url,
    jwks_uri: `${url}/jwks`,
    token_endpoint: `${url}/token`,
    authorization_endpoint: `${url}/authorize`,
  })

  return {
    url,
    mint: (audience, scope) =>
      new SignJWT({ scope })
        .setProtectedHeader({ alg: 'RS256', kid: KID })
        .setIssuer(url)
        .setAudience(audience)
        .setSubject('bench')
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(privateKey),
    close: () => new Promise((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  }
}
