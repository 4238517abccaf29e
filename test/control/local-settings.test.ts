// The two settings the local runtime shares with the builder by the builder's own names,
// DOCKER_CONFIG and RUST_ROOT, read through the settings table like every other (issue 41): a
// flag reaches the builder child and the toolchain check without the process's environment.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { createApp, firstFunction, startTestControl } from '../helpers/control.js'
import { writeStandIns } from '../fixtures/local-programs.js'
import { SHARED_COMPILED } from '../helpers/worker-probe.js'
import { toolchainCheck } from '@session-relay/control/local/programs'
import { LEFTOVER_JS_SEED } from '@session-relay/control/local/local'

// A control plane start and a build take several seconds each on a loaded machine.
t.setTimeout(180_000)

function scratch(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'local-settings-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

t.test('--docker-config: the builder gets it as DOCKER_CONFIG', async (t) => {
  const dir = scratch(t)
  const credentials = join(dir, 'registry-auth')
  const control = await startTestControl(
    t,
    'pglite',
    [
      '--dev-insecure-skip-auth',
      '--runtime',
      'local',
      '--local-cache-dir',
      SHARED_COMPILED,
      '--docker-config',
      credentials,
    ],
    { deps: { local: { ...writeStandIns(dir), toolchains: toolchainCheck('', undefined, process.env.PATH) } } },
  )
  const app = await createApp(control, 'creds', { language: 'js' })
  const source = await control.call('PUT', `/applications/${app.id}/functions/${firstFunction(app).id}/source`, {
    json: { files: { 'index.js': 'export default 1\n' } },
  })
  t.equal(source.status, 200)
  const started = await control.call('POST', `/applications/${app.id}/builds`)
  t.equal(started.status, 202)
  const buildId = (started.body as { id: string }).id
  // The followed log ends when the build has ended: its whole text, without polling.
  const log = await fetch(`${control.url}/api/v1/applications/${app.id}/builds/${buildId}/logs?follow=true`)
  t.equal(log.status, 200)
  const text = await log.text()
  t.match(text, `docker config ${credentials}\n`, 'the directory the flag named')
  t.match(text, /done\n/, 'and the build went on to its end')
})

t.test('--rust-root: the root a rust build is checked against, named when it is not one', async (t) => {
  const dir = scratch(t)
  const root = join(dir, 'no-toolchain-here')
  // No stand-in toolchain check: the runtime's own, with the toolchains it prepares.
  const control = await startTestControl(
    t,
    'pglite',
    ['--dev-insecure-skip-auth', '--runtime', 'local', '--local-cache-dir', SHARED_COMPILED, '--rust-root', root],
    { deps: { local: writeStandIns(dir) } },
  )
  const app = await createApp(control, 'crab', { language: 'rust' })
  const refused = await control.call('POST', `/applications/${app.id}/builds`)
  t.equal(refused.status, 503)
  t.match(refused.body, { error: `rust builds need the wasm32 Rust toolchain root: none at ${root} ` })
})

t.test('a js engine seed left by an older control plane goes at the start; the toolchains stay', async (t) => {
  const toolchains = scratch(t)
  mkdirSync(join(toolchains, LEFTOVER_JS_SEED, 'key', 'home'), { recursive: true })
  writeFileSync(join(toolchains, LEFTOVER_JS_SEED, 'key', 'files.json'), '{}')
  mkdirSync(join(toolchains, 'go'))
  await startTestControl(t, 'pglite', [
    '--dev-insecure-skip-auth',
    '--runtime',
    'local',
    '--local-cache-dir',
    SHARED_COMPILED,
    '--local-toolchains-dir',
    toolchains,
  ])
  t.notOk(existsSync(join(toolchains, LEFTOVER_JS_SEED)), 'the seed is gone')
  t.ok(existsSync(join(toolchains, 'go')), 'the rest of the directory is kept')
})
