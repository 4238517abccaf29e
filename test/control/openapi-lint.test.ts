// The OpenAPI document passes Redocly's recommended rules, so clients and the console can be
// generated from it: no error, and no warning but one named exception (the three public probes
// of the health tag cannot answer a 4xx, and documenting one they never send would be false).
// Every operation has a unique operationId for generated clients to name their calls by.
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import type { Test } from 'tap'
import { startTestControl } from '../helpers/control.js'
import { selfSignedCertificate } from '../helpers/tls.js'

type Problem = { ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }

const PUBLIC_PROBES = ['/healthz', '/readyz', '/metrics', '/api/v1/openapi.json', '/api/v1/console-config'].map(
  (path) => `#/paths/${path.replaceAll('~', '~0').replaceAll('/', '~1')}/get`,
)

async function lint(t: Test, flags: string[]): Promise<Record<string, unknown>> {
  const control = await startTestControl(t, 'pglite', ['--dev-insecure-skip-auth', ...flags])
  const doc = (await control.call('GET', '/openapi.json')).body as {
    paths: Record<string, Record<string, { operationId?: string }>>
  }
  const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'openapi.json')
  writeFileSync(file, JSON.stringify(doc))

  const redocly = new URL('../../node_modules/.bin/redocly', import.meta.url).pathname
  // No telemetry and no update check: the suite runs with no network but loopback.
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NODE_OPTIONS: '' }
  const { stdout } = await promisify(execFile)(redocly, ['lint', file, '--format=json'], {
    env,
    cwd: dir,
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }))
  const problems = (JSON.parse(stdout) as { problems: Problem[] }).problems
  const brief = (p: Problem): string => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer ?? ''}: ${p.message}`
  t.same(problems.filter((p) => p.severity === 'error').map(brief), [], 'no error')
  const expected = (p: Problem): boolean =>
    p.ruleId === 'operation-4xx-response' && PUBLIC_PROBES.some((pointer) => p.location[0]?.pointer.startsWith(pointer))
  t.same(
    problems.filter((p) => p.severity !== 'error' && !expected(p)).map(brief),
    [],
    "no warning but the public probes' missing 4xx",
  )

  const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((op) => op.operationId))
  t.notOk(ids.includes(undefined), 'every operation has an operationId')
  t.equal(new Set(ids).size, ids.length, 'operationIds are unique')
  return doc.paths
}

t.test("the OpenAPI document passes Redocly's recommended rules", async (t) => {
  const paths = await lint(t, [])
  t.notOk('/registry/token' in paths, 'no token route without a token key')
})

t.test("so does the document of a control plane that is the registry's token server", async (t) => {
  const { certPath, keyPath } = await selfSignedCertificate(t)
  const file = join(mkdtempSync(join(tmpdir(), 'openapi-key-')), 'token.pem')
  t.teardown(() => rmSync(dirname(file), { recursive: true, force: true }))
  writeFileSync(file, `${readFileSync(keyPath, 'utf8')}${readFileSync(certPath, 'utf8')}`)
  const paths = await lint(t, ['--registry-token-key', file])
  t.ok('/registry/token' in paths, 'the token route is described')
})
