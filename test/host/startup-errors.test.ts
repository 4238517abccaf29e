// A host that cannot serve what it was given: an artifact whose wasm is no component, a tag
// that is not there, a port someone else holds, a trigger naming a component the lock lacks;
// and the CLI's contract around them (exit 2 for bad flags, 1 with "cannot start: <why>" when
// the application cannot start, 0 and the usage for --help). No build: the artifacts are
// written by hand into image-layout directories.
import { spawn } from 'node:child_process'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { pushSpinApp } from '@session-relay/spin/artifact'
import { sha256Digest } from '@session-relay/spin/digest'
import type { LockedApp } from '@session-relay/spin/format'
import { layoutStore } from '@session-relay/spin/layout'
import { startSpinApp } from '@session-relay/host/spin-app'
import { HOST, childEnv } from '../helpers/spin-processes.js'
import { stopAtTeardown } from '../helpers/stop-child.js'

t.setTimeout(120_000)

const quiet = { info: () => {}, warn: () => {}, error: () => {} }

async function tempDir (t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'host-startup-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** An image layout holding `lock` (with `wasm` for each component) tagged v1. */
async function layout (t: Test, lock: LockedApp, wasm: Map<string, Uint8Array>): Promise<string> {
  const dir = join(await tempDir(t), 'layout')
  await pushSpinApp(layoutStore(dir), 'v1', { lockedApp: lock, wasm })
  return dir
}

function lock (components: string[], triggers: Array<[string, string]>): LockedApp {
  return {
    spin_lock_version: 1,
    triggers: triggers.map(([route, component], i) => ({ id: `t${i}`, trigger_type: 'http', trigger_config: { component, route } })),
    components: components.map((id) => ({ id, source: { content_type: 'application/wasm', source: `file:///tmp/${id}.wasm` } })),
  }
}

t.test('wasm that is not a component refuses to start and leaves no cache entry', async (t) => {
  const dir = await layout(t, lock(['broken'], [['/...', 'broken']]), new Map([['broken', Buffer.from('this is not wasm')]]))
  const cache = join(await tempDir(t), 'cache')
  const layer = sha256Digest(Buffer.from('this is not wasm'))
  await t.rejects(startSpinApp({ ref: `oci-layout:${dir}:v1`, port: 0, cacheDir: cache, logger: quiet }),
    { message: `the wasm layer ${layer} is not a component jco can transpile: expected \`(\`` })
  t.same(await readdir(cache), [], 'neither a cache entry nor a temporary directory is left')
})

t.test('a tag the layout does not hold', async (t) => {
  const dir = await layout(t, lock([], []), new Map())
  await t.rejects(startSpinApp({ ref: `oci-layout:${dir}:v2`, port: 0, cacheDir: join(dir, 'cache'), logger: quiet }), { message: `no manifest tagged "v2" in ${dir}` })
})

t.test('a port that is taken', async (t) => {
  const holder = http.createServer()
  t.teardown(() => new Promise<void>((resolve) => holder.close(() => resolve())))
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
  const dir = await layout(t, lock([], []), new Map())
  await t.rejects(startSpinApp({ ref: `oci-layout:${dir}:v1`, port: (holder.address() as AddressInfo).port, cacheDir: join(dir, 'cache'), logger: quiet }), { code: 'EADDRINUSE' })
})

t.test('a route to a component the lock does not have answers 404, as no route does', async (t) => {
  const dir = await layout(t, lock([], [['/ghost/...', 'ghost']]), new Map())
  const app = await startSpinApp({ ref: `oci-layout:${dir}:v1`, port: 0, host: '::1', cacheDir: join(dir, 'cache'), logger: quiet }).catch(async (error: NodeJS.ErrnoException) => {
    // A machine without IPv6 loopback: the bracketed URL is then not tested, the 404 still is.
    if (error.code !== 'EADDRNOTAVAIL') throw error
    return startSpinApp({ ref: `oci-layout:${dir}:v1`, port: 0, cacheDir: join(dir, 'cache'), logger: quiet })
  })
  t.teardown(app.close)
  if (app.url.startsWith('http://[')) t.match(app.url, /^http:\/\/\[::1\]:\d+$/, 'an IPv6 address is bracketed in the URL')
  for (const path of ['/ghost/x', '/elsewhere']) {
    const response = await fetch(`${app.url}${path}`)
    t.equal(response.status, 404, path)
    t.equal(await response.text(), 'no route\n')
  }
})

async function runHost (t: Test, args: string[], stdin?: string | Buffer): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [HOST, ...args], { env: childEnv({}), stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] })
  if (stdin !== undefined) {
    // The host stops reading once it refuses: the rest of a big input meets a closed pipe.
    child.stdin?.on('error', () => {})
    child.stdin?.end(stdin)
  }
  stopAtTeardown(t, child)
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', resolve)
  })
  return { code, stdout, stderr }
}

t.test('--variables-stdin refuses what is not one JSON object of strings, or too much of it, before it starts', async (t) => {
  const args = ['--ref', 'oci-layout:/nowhere:v1', '--variables-stdin']
  for (const [what, input, reason] of [
    ['not JSON', 'greeting=hi', 'the variables on stdin are not one JSON object'],
    ['an array', '["hi"]', 'the variables on stdin must be one JSON object of strings'],
    ['a value that is not a string', '{"greeting": 1}', 'the variables on stdin must be one JSON object of strings'],
    ['more than 4 MiB', Buffer.alloc(5 * 1024 * 1024, 0x61), 'the variables on stdin are larger than 4194304 bytes'],
  ] as const) {
    const run = await runHost(t, [...args], input)
    t.equal(run.code, 1, `${what}: exit 1`)
    t.match(run.stderr, `cannot start: ${reason}`, what)
    t.equal(run.stdout, '', `${what}: no listening line`)
  }
})

t.test('the CLI', async (t) => {
  t.test('--help prints the usage and exits 0', async (t) => {
    const run = await runHost(t, ['--help'])
    t.equal(run.code, 0)
    t.match(run.stdout, /^Usage: node host\/dist\/main\.js/)
    t.match(run.stdout, /--max-body/)
  })

  t.test('a flag that does not parse exits 2 with the reason', async (t) => {
    const run = await runHost(t, ['--ref', 'oci-layout:/tmp/x:v1', '--port', '70000'])
    t.equal(run.code, 2)
    t.equal(run.stderr, 'invalid value "70000" for --port: a port from 0 to 65535\n')
    t.equal(run.stdout, '')
  })

  t.test('an application that cannot start exits 1 and says why', async (t) => {
    const dir = await layout(t, lock([], []), new Map())
    const run = await runHost(t, ['--ref', `oci-layout:${dir}:missing`, '--cache-dir', join(dir, 'cache')])
    t.equal(run.code, 1)
    t.match(run.stderr, `cannot start: no manifest tagged "missing" in ${dir}\n`)
    t.equal(run.stdout, '', 'no URL line')
  })
})
