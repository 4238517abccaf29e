// Builds that prepare their toolchain, through the control plane's API: the first go builds on
// a machine without Go fetch it (a Go module proxy stand-in) while the build deadline waits,
// two builds at once fetch it once and both log it; a rust build where the root cannot be made
// answers 503 naming the command. The builder is the stand-in (test/fixtures/local-programs.ts).
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { createApp, firstFunction, startTestControl, until } from '../helpers/control.js'
import type { TestControl } from '../helpers/control.js'
import { writeStandIns } from '../fixtures/local-programs.js'
import { goProxyStandIn } from '../fixtures/go-module-proxy.js'
import { SHARED_COMPILED } from '../helpers/worker-probe.js'
import { shippedProgram, toolchainCheck } from '@session-relay/control/local/programs'
import { localToolchains } from '@session-relay/control/local/toolchains'
import type { LocalToolchains } from '@session-relay/control/local/toolchains'

const VERSION = '1.99.0'
// No go here: /usr/local/go/bin and the like stay out.
const NO_GO = '/usr/bin:/bin'

type Build = { id: string; status: string; error: string | null }

// Long enough for the stand-in builder's own run on a loaded machine (1 s was not, at load
// 15: two node processes start in it), short enough to wait past in the test below.
const BUILD_TIMEOUT_MS = 6_000

async function start(t: Test, prepared: LocalToolchains): Promise<TestControl> {
  const dir = t.testdir({})
  return await startTestControl(
    t,
    'pglite',
    [
      '--dev-insecure-skip-auth',
      '--runtime',
      'local',
      '--local-cache-dir',
      SHARED_COMPILED,
      '--local-builds',
      '2',
      '--build-timeout',
      `${BUILD_TIMEOUT_MS}ms`,
    ],
    {
      deps: {
        local: {
          ...writeStandIns(dir),
          prepared,
          toolchains: toolchainCheck(NO_GO, undefined, process.env.PATH, null, prepared),
        },
      },
    },
  )
}

async function app(control: TestControl, name: string, language: string): Promise<string> {
  const created = await createApp(control, name, { language })
  const put = await control.call('PUT', `/applications/${created.id}/functions/${firstFunction(created).id}/source`, {
    json: { files: language === 'go' ? { 'main.go': 'package main\n' } : { 'src/lib.rs': '' } },
  })
  if (put.status !== 200) throw new Error(`source: ${put.status} ${put.text}`)
  return created.id
}

/** The build's log once it holds `text` (the live log while it runs, without following). */
async function logHolding(control: TestControl, appId: string, buildId: string, text: string): Promise<string> {
  let log = ''
  await until(
    async () =>
      (log = (await control.call('GET', `/applications/${appId}/builds/${buildId}/logs`)).text).includes(text),
    20_000,
    `the log to hold ${text}`,
  )
  return log
}

t.test('two go builds on a machine without Go: one fetch, both logged, neither past its deadline', async (t) => {
  const proxy = await goProxyStandIn(t, { version: VERSION, arch: 'amd64', hold: true })
  const toolchains = t.testdir({})
  const prepared = localToolchains({
    dir: toolchains,
    path: NO_GO,
    goProxy: proxy.url,
    isRoot: false,
    rustRootSetting: '',
    checkoutRustRoot: join(toolchains, 'none'),
    rustScript: shippedProgram('scripts/rust-wasm-root.sh'),
    arch: 'x64',
    goPin: { version: VERSION, sha256: { amd64: proxy.sha256 } },
  })
  const control = await start(t, prepared)
  const apps = [await app(control, 'one', 'go'), await app(control, 'two', 'go')]
  const builds: Build[] = []
  for (const id of apps) {
    const started = await control.call('POST', `/applications/${id}/builds`)
    t.equal(started.status, 202, 'no go on PATH is no refusal')
    builds.push(started.body as Build)
  }
  await proxy.held()
  await logHolding(control, apps[0] as string, (builds[0] as Build).id, 'toolchain: fetching Go')
  await logHolding(control, apps[1] as string, (builds[1] as Build).id, 'another build is preparing the go toolchain')
  // The one wait on the clock: the deadline under test is a clock. Past --build-timeout
  // while the fetch is held, neither build may have failed.
  await new Promise((resolve) => setTimeout(resolve, BUILD_TIMEOUT_MS + 500))
  proxy.release()
  for (const [index, id] of apps.entries()) {
    const buildId = (builds[index] as Build).id
    let last: Build | undefined
    await until(
      async () =>
        (last = (await control.call('GET', `/applications/${id}/builds/${buildId}`)).body as Build).status !==
        'running',
      20_000,
      'the build to end',
    )
    t.equal(last?.status, 'succeeded', `build ${index + 1} succeeded: ${last?.error ?? ''}`)
    const log = (await control.call('GET', `/applications/${id}/builds/${buildId}/logs`)).text
    t.match(
      log,
      new RegExp(`toolchain: Go ${VERSION} ready at .*\\n(.|\\n)*building ${index === 0 ? 'one' : 'two'} go`),
    )
    t.match(log, `path ${join(toolchains, 'go', `go${VERSION}`, 'bin')}\n`, "the fetched Go leads the builder's PATH")
  }
  t.equal(proxy.zipRequests(), 1, 'fetched once')
})

t.test('a rust build where the root cannot be made: 503 naming the command, no build queued', async (t) => {
  const toolchains = t.testdir({})
  const script = shippedProgram('scripts/rust-wasm-root.sh')
  const prepared = localToolchains({
    dir: toolchains,
    path: process.env.PATH ?? '',
    goProxy: 'http://127.0.0.1:9',
    isRoot: false,
    rustRootSetting: '',
    checkoutRustRoot: join(toolchains, 'none'),
    rustScript: script,
  })
  const control = await start(t, prepared)
  const id = await app(control, 'crab', 'rust')
  const refused = await control.call('POST', `/applications/${id}/builds`)
  t.equal(refused.status, 503)
  t.match((refused.body as { error: string }).error, `run sudo ${script} ${toolchains}/rust-wasm once`)
  t.same((await control.call('GET', `/applications/${id}/builds`)).body, [])
})
