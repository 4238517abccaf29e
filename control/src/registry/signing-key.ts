// The key the control plane signs registry tokens with, when it is the registry's token server
// (--registry-token-key): a PEM file with the private key and then its certificate, the one the
// registry trusts (its auth.token.rootcertbundle). Read once at start, so a bad file stops the
// start with a message rather than failing a build later.
import type { KeyObject } from 'node:crypto'
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { ConfigError } from '@session-relay/common/config/settings'

/** The `iss` of every token and credential; the registry's auth.token.issuer must say the same. */
export const REGISTRY_TOKEN_ISSUER = 'wasmkube-control'

export type RegistrySigner = {
  privateKey: KeyObject
  publicKey: KeyObject
  alg: 'RS256' | 'ES256'
  /** The certificate, base64 DER: the registry finds its trusted key by it (x5c header). */
  x5c: string[]
  /** The registry's auth.token.service: the tokens' audience. */
  service: string
}

const CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/

export function loadRegistrySigner(config: {
  registryTokenKey: string
  registryTokenService: string
}): RegistrySigner | null {
  if (config.registryTokenKey === '') return null
  const flag = '--registry-token-key (PLATFORM_REGISTRY_TOKEN_KEY)'
  let pem: string
  try {
    pem = readFileSync(config.registryTokenKey, 'utf8')
  } catch (error) {
    throw new ConfigError(
      `${flag}: cannot read ${config.registryTokenKey}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    )
  }
  const certificateText = CERTIFICATE.exec(pem)?.[0]
  if (certificateText === undefined)
    throw new ConfigError(
      `${flag}: ${config.registryTokenKey} holds no certificate; append the certificate the registry trusts after the private key`,
    )
  let privateKey: KeyObject
  let certificate: X509Certificate
  try {
    privateKey = createPrivateKey(pem)
    certificate = new X509Certificate(certificateText)
  } catch {
    throw new ConfigError(`${flag}: ${config.registryTokenKey} holds no readable private key and certificate (PEM)`)
  }
  if (!certificate.checkPrivateKey(privateKey))
    throw new ConfigError(`${flag}: the certificate in ${config.registryTokenKey} is not the private key's`)
  const alg = algorithmOf(privateKey)
  if (alg === null) throw new ConfigError(`${flag}: the key must be RSA (2048 bits or more) or EC P-256`)
  return {
    privateKey,
    publicKey: certificate.publicKey,
    alg,
    x5c: [certificate.raw.toString('base64')],
    service: config.registryTokenService,
  }
}

function algorithmOf(key: KeyObject): RegistrySigner['alg'] | null {
  const details = key.asymmetricKeyDetails
  if (key.asymmetricKeyType === 'rsa' && (details?.modulusLength ?? 0) >= 2048) return 'RS256'
  if (key.asymmetricKeyType === 'ec' && details?.namedCurve === 'prime256v1') return 'ES256'
  return null
}
