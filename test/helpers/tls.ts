// A self-signed certificate for 127.0.0.1, made at test time with the openssl CLI.
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Test } from 'tap'

export async function selfSignedCertificate(t: Test): Promise<{ certPath: string; keyPath: string; certPem: string }> {
  // A directory of its own, so two certificates of one test (or a test's own t.testdir) never collide.
  const dir = await mkdtemp(join(tmpdir(), 'test-tls-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const certPath = join(dir, 'cert.pem')
  const keyPath = join(dir, 'key.pem')
  try {
    await promisify(execFile)('openssl', [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      keyPath,
      '-out',
      certPath,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ])
  } catch (error) {
    throw new Error(`could not make a test certificate with the openssl CLI: ${(error as Error).message}`)
  }
  return { certPath, keyPath, certPem: await readFile(certPath, 'utf8') }
}
