// Secret variable values at rest on the local runtime: AES-256-GCM under a 32-byte key from
// --secret-key-file, or, without one, a key generated once into the data directory (mode 0600,
// created exclusively so two processes starting together cannot write different keys). A
// sealed value is base64 of version byte, 12-byte nonce, ciphertext and 16-byte tag; the
// variable's name is the additional data, so a sealed value moved to another name (or another
// application) does not open. Losing the key loses the secrets, nothing else.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError } from '@session-relay/common/config/settings'

const VERSION = 1
const NONCE_BYTES = 12
const TAG_BYTES = 16
const KEY_BYTES = 32
const GENERATED_KEY_FILE = 'secret.key'

export type SecretBox = {
  seal(plaintext: string, context: string): string
  /** Null when the sealed text does not open with this key (another key, or tampered with). */
  open(sealed: string, context: string): string | null
}

const boxes = new Map<string, SecretBox>()

/** The box of `keyFile`, or of the data directory's generated key when it is empty; one per file for the process. */
export function secretBox(settings: { secretKeyFile: string; dataDir: string }): SecretBox {
  const file = settings.secretKeyFile !== '' ? settings.secretKeyFile : join(settings.dataDir, GENERATED_KEY_FILE)
  let box = boxes.get(file)
  if (box === undefined) {
    box = boxWith(loadKey(file, settings.secretKeyFile === ''))
    boxes.set(file, box)
  }
  return box
}

function loadKey(file: string, generate: boolean): Buffer {
  if (generate) {
    try {
      writeFileSync(file, randomBytes(KEY_BYTES).toString('base64') + '\n', { mode: 0o600, flag: 'wx' })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new ConfigError(`cannot create the secret key ${file}: ${(error as Error).message}`)
    }
  }
  let text: string
  try {
    text = readFileSync(file, 'utf8').trim()
  } catch (error) {
    throw new ConfigError(`cannot read the secret key ${file}: ${(error as Error).message}`)
  }
  const key = Buffer.from(text, 'base64')
  // Never the key's text in the message: only what is wrong with it.
  if (key.length !== KEY_BYTES)
    throw new ConfigError(
      `the secret key ${file} is not ${KEY_BYTES} bytes of base64 (openssl rand -base64 32 makes one)`,
    )
  return key
}

function boxWith(key: Buffer): SecretBox {
  return {
    seal(plaintext, context) {
      const nonce = randomBytes(NONCE_BYTES)
      const cipher = createCipheriv('aes-256-gcm', key, nonce)
      cipher.setAAD(Buffer.from(context, 'utf8'))
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
      return Buffer.concat([Buffer.from([VERSION]), nonce, body, cipher.getAuthTag()]).toString('base64')
    },
    open(sealed, context) {
      const bytes = Buffer.from(sealed, 'base64')
      if (bytes.length < 1 + NONCE_BYTES + TAG_BYTES || bytes[0] !== VERSION) return null
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(1, 1 + NONCE_BYTES))
        decipher.setAAD(Buffer.from(context, 'utf8'))
        decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES))
        return Buffer.concat([
          decipher.update(bytes.subarray(1 + NONCE_BYTES, bytes.length - TAG_BYTES)),
          decipher.final(),
        ]).toString('utf8')
      } catch {
        return null
      }
    },
  }
}

type KeySettings = { secretKeyFile: string; dataDir: string }

/** The data a sealed variable value is bound to: it opens only for this variable of this application. */
const variableContext = (appId: string, name: string): string => `${appId}/${name}`

export function sealVariable(settings: KeySettings, appId: string, name: string, value: string): string {
  return secretBox(settings).seal(value, variableContext(appId, name))
}

/** Null when it does not open (another key, another variable, tampered with). */
export function openVariable(settings: KeySettings, appId: string, name: string, sealed: string): string | null {
  return secretBox(settings).open(sealed, variableContext(appId, name))
}
