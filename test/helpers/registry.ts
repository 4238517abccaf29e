// A real OCI registry on loopback for the builder and host tests: the CNCF distribution
// registry as Debian packages it (`docker-registry`, installed by scripts/install-test-tools.sh),
// with filesystem storage in a temporary directory and, when asked, htpasswd authentication or
// bearer-token authentication against a token service the test runs.
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { freePort } from './ports.js'

export type TestRegistry = {
  /** host:port, the registry part of a reference. */
  host: string
  url: string
  /** The htpasswd user when started with auth. */
  credentials: { username: string; password: string } | null
  output: () => string
}

const REGISTRY_BINARY = process.env.DOCKER_REGISTRY_BIN ?? 'docker-registry'
// bcrypt of TEST_PASSWORD (cost 5): a test fixture, not a secret.
const TEST_USER = 'builder'
const TEST_PASSWORD = 'test-password'
const TEST_HTPASSWD = `${TEST_USER}:$2b$05$iI/zsGpidcOuWF8ueqE5K.HLu0MWsR8gK4d95EXnjiSfABxMEgyDe\n`
const START_TIMEOUT_MS = 15_000

/** Token authentication: the registry trusts tokens from `issuer` signed by the key of `certPath`. */
export type TokenAuth = { realm: string; service: string; issuer: string; certPath: string }

/** `port`: one picked earlier (freePort), when something started before must name the registry. */
export async function startRegistry(
  t: Test,
  options: { auth?: boolean; token?: TokenAuth; port?: number } = {},
): Promise<TestRegistry> {
  const dir = await mkdtemp(join(tmpdir(), 'test-registry-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const port = options.port ?? (await freePort())
  const auth = options.auth === true
  if (auth) await writeFile(join(dir, 'htpasswd'), TEST_HTPASSWD)
  const config = [
    'version: 0.1',
    'log:',
    '  level: warn',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${join(dir, 'data')}`,
    'http:',
    `  addr: 127.0.0.1:${port}`,
    ...(auth ? ['auth:', '  htpasswd:', '    realm: test-registry', `    path: ${join(dir, 'htpasswd')}`] : []),
    ...(options.token === undefined
      ? []
      : [
          'auth:',
          '  token:',
          `    realm: ${options.token.realm}`,
          `    service: ${options.token.service}`,
          `    issuer: ${options.token.issuer}`,
          `    rootcertbundle: ${options.token.certPath}`,
        ]),
  ].join('\n')
  await writeFile(join(dir, 'config.yml'), `${config}\n`)
  const child = spawn(REGISTRY_BINARY, ['serve', join(dir, 'config.yml')], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk
  })
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  const spawned = new Promise<never>((_resolve, reject) => {
    child.once('error', (error) =>
      reject(new Error(`cannot start ${REGISTRY_BINARY} (run scripts/install-test-tools.sh): ${error.message}`)),
    )
    child.once('exit', (code) => reject(new Error(`${REGISTRY_BINARY} exited with ${String(code)}: ${output}`)))
  })
  const url = `http://127.0.0.1:${port}`
  await Promise.race([spawned, answering(`${url}/v2/`)])
  spawned.catch(() => {})
  return {
    host: `127.0.0.1:${port}`,
    url,
    credentials: auth ? { username: TEST_USER, password: TEST_PASSWORD } : null,
    output: () => output,
  }
}

// Polls /v2/ until the registry answers (200, or 401 with auth): it has no readiness signal.
async function answering(url: string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS
  for (;;) {
    try {
      const response = await fetch(url)
      await response.body?.cancel()
      return
    } catch {
      if (Date.now() > deadline) throw new Error(`${url} did not answer within ${START_TIMEOUT_MS} ms`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

/** A Docker config.json directory holding `credentials` for `host`. */
export async function dockerConfigDir(
  t: Test,
  host: string,
  credentials: { username: string; password: string },
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'test-docker-config-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const auth = Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')
  await writeFile(join(dir, 'config.json'), JSON.stringify({ auths: { [host]: { auth } } }))
  return dir
}
