// Applications on the local runtime with a stand-in builder and the real worker, and requests
// that hold their instance: what the fairness tests (issue 40) are made of.
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { writeStandIns } from '../fixtures/local-programs.js'
import { toolchainCheck } from '@session-relay/control/local/programs'
import { createApp, startTestControl, until } from './control.js'
import type { TestControl } from './control.js'
import { SHARED_COMPILED } from './worker-probe.js'

export type Deployment = { ready: boolean; publicUrl: string }

/** `settings` are PATCHed before the build, so the first load has them. */
export async function deployed(control: TestControl, name: string, settings?: object): Promise<URL> {
  const app = await createApp(control, name, { language: 'js' })
  if (settings !== undefined) await control.call('PATCH', `/applications/${app.id}`, { json: settings })
  await control.call('POST', `/applications/${app.id}/builds`)
  let deployment: Deployment | null = null
  await until(
    async () => {
      deployment = ((await control.call('GET', `/applications/${app.id}`)).body as { deployment: Deployment | null })
        .deployment
      return deployment?.ready === true
    },
    120_000,
    `${name} deployed`,
  )
  return new URL((deployment as unknown as Deployment).publicUrl)
}

/** `POST /echo` promising ten bytes and sending five: its instance waits for the rest; `finish` sends it and reads the answer. */
export function heldEcho(url: URL): { finish: () => Promise<string>; refused: () => boolean; answer: () => string } {
  const socket: Socket = connect(Number(url.port), '127.0.0.1')
  let answer = ''
  socket.setEncoding('latin1').on('data', (chunk: string) => (answer += chunk))
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
  socket.write(`POST /echo HTTP/1.1\r\nhost: ${url.host}\r\nconnection: close\r\ncontent-length: 10\r\n\r\n12345`)
  return {
    finish: async () => {
      socket.write('67890')
      await closed
      return answer
    },
    // Answered before its body was sent: it found the only turn taken and no room to wait.
    refused: () => answer !== '',
    /** What it was answered so far (a refused one: all of it; never finish one of those). */
    answer: () => answer,
  }
}

export type Held = ReturnType<typeof heldEcho>

/**
 * A held request that has the application's only turn, known by a quick request's 429 while
 * it stays unanswered; `retryAfter` is that 429's header. A quick request may take the turn
 * first, and the held one, with no room to wait, is then refused: it is sent again.
 */
export async function holdOnlyTurn(url: URL): Promise<{ held: Held; retryAfter: string }> {
  let held = heldEcho(url)
  let retryAfter = ''
  await until(
    async () => {
      if (held.refused()) held = heldEcho(url)
      const answer = await fetch(url)
      retryAfter = answer.headers.get('retry-after') ?? ''
      await answer.arrayBuffer()
      return answer.status === 429 && !held.refused()
    },
    20_000,
    'a 429 while the held request runs',
  )
  return { held, retryAfter }
}

export async function localControl(t: Test, flags: string[] = []): Promise<TestControl> {
  const dir = mkdtempSync(join(tmpdir(), 'local-fairness-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return await startTestControl(
    t,
    'pglite',
    ['--dev-insecure-skip-auth', '--runtime', 'local', '--local-cache-dir', SHARED_COMPILED, ...flags],
    { deps: { local: { ...writeStandIns(dir), toolchains: toolchainCheck('', undefined, process.env.PATH) } } },
  )
}
