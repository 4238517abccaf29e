// A redeploy on one machine is atomic from a caller's view (issue 28): the control plane (local
// runtime, a stand-in builder, the real worker) serves the probe function, clients invoke it in
// loops through the control plane and at its public URL (a kept-alive connection) while a PATCH
// of its variables redeploys it. Every answer is a 200; once a client saw the new version it
// never sees the old one again; every request sent after the deployment says ready gets the new
// version's answer.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { toolchainCheck } from '@session-relay/control/local/programs'
import { writeStandIns } from '../fixtures/local-programs.js'
import { createApp, firstFunction, startTestControl, until } from '../helpers/control.js'
import type { TestControl } from '../helpers/control.js'
import { SHARED_COMPILED } from '../helpers/worker-probe.js'

t.setTimeout(300_000)

type Deployment = { image: string; ready: boolean; publicUrl: string | null; message: string }
/** One answer a client got: its status (the HTTP one, or the function's inside an invoke), the value, and whether the request went out after the deployment said ready. */
type Seen = { status: number; value: unknown; afterReady: boolean }

async function deploymentOf(control: TestControl, appId: string): Promise<Deployment | null> {
  return ((await control.call('GET', `/applications/${appId}`)).body as { deployment: Deployment | null }).deployment
}

function valueOf(text: string): unknown {
  try {
    return (JSON.parse(text) as { variable: { value?: unknown } | null }).variable?.value
  } catch {
    return text
  }
}

t.test(
  'a redeploy under load: only 200s through invoke and at the public URL, the new version once the deployment says ready',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'local-redeploy-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const control = await startTestControl(
      t,
      'pglite',
      ['--dev-insecure-skip-auth', '--runtime', 'local', '--local-cache-dir', SHARED_COMPILED],
      { deps: { local: { ...writeStandIns(dir), toolchains: toolchainCheck('', undefined, process.env.PATH) } } },
    )
    const app = await createApp(control, 'steady', { language: 'js' })
    const fn = firstFunction(app)
    t.equal(
      (await control.call('PATCH', `/applications/${app.id}`, { json: { variables: { greeting: { value: 'old' } } } }))
        .status,
      200,
    )
    t.equal((await control.call('POST', `/applications/${app.id}/builds`)).status, 202)
    await until(async () => (await deploymentOf(control, app.id))?.ready === true, 120_000, 'the first deploy ready')
    const before = (await deploymentOf(control, app.id)) as Deployment
    const publicUrl = before.publicUrl as string

    let readySeen = false
    let stop = false
    const invoked1: Seen[] = []
    const invoked2: Seen[] = []
    const fetched: Seen[] = []
    const loop = async (into: Seen[], send: () => Promise<{ status: number; value: unknown }>): Promise<void> => {
      while (!stop) {
        const afterReady = readySeen
        const answer = await send().catch((error: unknown) => ({ status: -1, value: String(error) }))
        into.push({ ...answer, afterReady })
      }
    }
    const invoke = async (): Promise<{ status: number; value: unknown }> => {
      const reply = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, {
        json: { method: 'GET', path: '/?name=greeting' },
      })
      if (reply.status !== 200) return { status: reply.status, value: reply.text }
      const result = reply.body as { status: number; body: string }
      return { status: result.status, value: valueOf(result.body) }
    }
    // Node's fetch keeps its connection to the public URL alive across the redeploy.
    const atUrl = async (): Promise<{ status: number; value: unknown }> => {
      const answer = await fetch(`${publicUrl}/?name=greeting`)
      return { status: answer.status, value: valueOf(await answer.text()) }
    }
    const clients = [loop(invoked1, invoke), loop(invoked2, invoke), loop(fetched, atUrl)]
    const all = (): Seen[][] => [invoked1, invoked2, fetched]
    try {
      await until(() => all().every((seen) => seen.length >= 3), 30_000, 'every client answered before the redeploy')
      const patched = await control.call('PATCH', `/applications/${app.id}`, {
        json: { variables: { greeting: { value: 'new' } } },
      })
      t.match(patched.body, { deployment: { message: /^re-applied with the new settings/ } })
      await until(async () => (await deploymentOf(control, app.id))?.ready === true, 60_000, 'the redeploy ready')
      readySeen = true
      await until(
        () => all().every((seen) => seen.filter((answer) => answer.afterReady).length >= 3),
        30_000,
        'every client answered after ready',
      )
    } finally {
      stop = true
      await Promise.all(clients)
    }

    const after = (await deploymentOf(control, app.id)) as Deployment
    t.equal(after.publicUrl, publicUrl, 'the same URL')
    t.match(after, { ready: true, message: '1 of 1 replicas ready' })
    for (const [name, seen] of [
      ['invoke 1', invoked1],
      ['invoke 2', invoked2],
      ['public URL', fetched],
    ] as const) {
      t.same(
        seen.filter((answer) => answer.status !== 200),
        [],
        `${name}: only 200s (${seen.length} answers)`,
      )
      t.same(
        [...new Set(seen.map((answer) => answer.value))].filter((value) => value !== 'old' && value !== 'new'),
        [],
        `${name}: the old or the new version, nothing else`,
      )
      const firstNew = seen.findIndex((answer) => answer.value === 'new')
      t.ok(
        firstNew >= 0 && seen.slice(firstNew).every((answer) => answer.value === 'new'),
        `${name}: once the new version answered, only it`,
      )
      t.ok(
        seen.filter((answer) => answer.afterReady).every((answer) => answer.value === 'new'),
        `${name}: the new version after the deployment said ready`,
      )
    }
  },
)
