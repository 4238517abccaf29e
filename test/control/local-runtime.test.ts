// The runtime on one machine, with a stand-in for the builder program that follows its
// contract and "builds" the worker's probe function: builds as child processes (environment,
// queue, timeout, live and stored log, outcome from the termination log), a restart failing
// what was left running, missing toolchains answering 503 by name, and deployments loaded into
// the real worker: ready, invoked, reloaded on redeploy, unloaded on delete, stopped at
// shutdown, brought back after a restart, a crashed worker restarted, scaled to zero.
import { randomUUID } from 'node:crypto'
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import t from 'tap'
import type { Test } from 'tap'
import { spawn } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { createApp, freshStore, firstFunction, startTestControl, until } from '../helpers/control.js'
import type { Store, TestControl } from '../helpers/control.js'
import { writeStandIns } from '../fixtures/local-programs.js'
import { SHARED_COMPILED, WORKER_BIN, ownCompiledDir } from '../helpers/worker-probe.js'
import { toolchainCheck } from '@session-relay/control/local/programs'
import { startBuild } from '@session-relay/control/domain/builds'
import { createBuild, markRunning } from '@session-relay/control/store/builds'

// Each test starts a control plane (several seconds on a loaded machine); the file takes more
// than tap's default two minutes.
t.setTimeout(300_000)

type Build = { id: string; status: string; imageRef: string | null; error: string | null }
type Deployment = {
  image: string
  replicas: number
  observedReplicas: number
  ready: boolean
  internalUrl: string
  publicUrl: string | null
  message: string
}

function scratch(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'local-runtime-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

// The probe compiles once into the shared directory; a test that deletes an application (which
// prunes what its worker no longer uses) passes its own --local-cache-dir.
async function startLocal(
  t: Test,
  flags: string[] = [],
  store?: Store,
): Promise<{ control: TestControl; dir: string }> {
  const dir = scratch(t)
  const programs = writeStandIns(dir)
  const cache = flags.includes('--local-cache-dir') ? [] : ['--local-cache-dir', SHARED_COMPILED]
  const control = await startTestControl(
    t,
    'pglite',
    ['--dev-insecure-skip-auth', '--runtime', 'local', ...cache, ...flags],
    {
      ...(store !== undefined ? { store } : {}),
      deps: { local: { ...programs, toolchains: toolchainCheck('', undefined, process.env.PATH) } },
    },
  )
  return { control, dir }
}

async function jsApp(control: TestControl, name: string, mode = ''): Promise<{ id: string; fnId: string }> {
  const app = await createApp(control, name, { language: 'js' })
  const fn = firstFunction(app)
  const put = await control.call('PUT', `/applications/${app.id}/functions/${fn.id}/source`, {
    json: { files: { 'index.js': `// ${mode}\nexport default 1\n` } },
  })
  if (put.status !== 200) throw new Error(`source: ${put.status} ${put.text}`)
  return { id: app.id, fnId: fn.id }
}

async function build(control: TestControl, appId: string): Promise<Build> {
  const started = await control.call('POST', `/applications/${appId}/builds`)
  if (started.status !== 202) throw new Error(`build: ${started.status} ${started.text}`)
  return started.body as Build
}

async function untilBuild(
  control: TestControl,
  appId: string,
  buildId: string,
  status: string,
  timeoutMs = 20_000,
): Promise<Build> {
  let last: Build | undefined
  await until(
    async () =>
      (last = (await control.call('GET', `/applications/${appId}/builds/${buildId}`)).body as Build).status === status,
    timeoutMs,
    `build ${status}`,
  )
  return last as Build
}

async function deploymentOf(control: TestControl, appId: string): Promise<Deployment | null> {
  return ((await control.call('GET', `/applications/${appId}`)).body as { deployment: Deployment | null }).deployment
}

type ProbeAnswer = { path: string; variable: { value?: string; error?: unknown } | null }

async function invoke(
  control: TestControl,
  appId: string,
  fnId: string,
  path = '/',
): Promise<{ status: number; answer: ProbeAnswer }> {
  const reply = await control.call('POST', `/applications/${appId}/functions/${fnId}/invoke`, {
    json: { method: 'GET', path },
  })
  if (reply.status !== 200) throw new Error(`invoke: ${reply.status} ${reply.text}`)
  const result = reply.body as { status: number; body: string }
  return { status: result.status, answer: JSON.parse(result.body) as ProbeAnswer }
}

/** The probe writes `printed {text}` to its stdout. */
async function print(control: TestControl, app: { id: string; fnId: string }, text: string): Promise<void> {
  const reply = await control.call('POST', `/applications/${app.id}/functions/${app.fnId}/invoke`, {
    json: { method: 'GET', path: `/print?text=${text}` },
  })
  if (reply.status !== 200) throw new Error(`invoke: ${reply.status} ${reply.text}`)
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
const workerPid = (control: TestControl): number =>
  Number(readFileSync(join(control.store.dataDir, 'runtime', 'worker', 'worker.pid'), 'utf8'))

t.test(
  'a build: the builder with the Job environment, running, succeeded with the digest it wrote, log kept, deployed and invoked',
  async (t) => {
    const { control, dir } = await startLocal(t, ['--local-cache-dir', ownCompiledDir(join(scratch(t), 'compiled'))])
    t.equal(control.server.cluster, null)
    t.not(control.server.local, null, 'no cluster: the local runtime')
    const gate = join(dir, 'gate')
    const app = await jsApp(control, 'hello', `MODE:wait:${gate}`)
    const started = await build(control, app.id)
    t.match(started, { status: 'pending', imageRef: null })
    await untilBuild(control, app.id, started.id, 'running')
    // Followed live: what it printed so far, then the rest until it exits.
    const follow = await fetch(`${control.url}/api/v1/applications/${app.id}/builds/${started.id}/logs?follow=true`)
    t.equal(follow.status, 200)
    const reader = follow.body!.getReader()
    let seen = ''
    while (!seen.includes('building hello js')) seen += Buffer.from((await reader.read()).value).toString('utf8')
    writeFileSync(gate, '')
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      seen += Buffer.from(chunk.value).toString('utf8')
    t.match(
      seen,
      /building hello js [0-9a-f-]{36}\n[^]*went on\n[^]*done\n/,
      'the whole log, streamed until the build ended',
    )
    const done = await untilBuild(control, app.id, started.id, 'succeeded')
    const layout = join(control.store.dataDir, 'runtime', 'images', 'hello')
    t.match(done.imageRef, new RegExp(`^oci-layout:${layout}@sha256:[0-9a-f]{64}$`), 'the reference the builder wrote')
    t.equal(done.error, null)
    const stored = await control.call('GET', `/applications/${app.id}/builds/${started.id}/logs`)
    t.match(stored.text, /env \[\]\n/, "none of the control plane's own settings reach the builder")
    t.match(stored.text, /done\n$/)
    t.notOk(existsSync(join(control.store.dataDir, 'runtime', 'builds', started.id)), 'the scratch directory is gone')

    await until(async () => (await deploymentOf(control, app.id))?.ready === true, 60_000, 'deployment ready')
    const deployment = await deploymentOf(control, app.id)
    t.match(deployment, {
      image: done.imageRef,
      replicas: 1,
      ready: true,
      internalUrl: /^http:\/\/127\.0\.0\.1:[0-9]+$/,
      message: '1 of 1 replicas ready',
    })
    t.equal(deployment?.publicUrl, deployment?.internalUrl, 'the public address on this machine is the loopback one')
    const direct = await fetch(`${String(deployment?.publicUrl)}/direct`)
    t.same(
      { status: direct.status, path: ((await direct.json()) as { path: string }).path },
      { status: 200, path: '/direct' },
      'and it answers',
    )
    const first = await invoke(control, app.id, app.fnId, '/hello?x=1')
    t.same({ status: first.status, path: first.answer.path }, { status: 200, path: '/hello' })
    await print(control, app, 'one')
    await until(
      async () => (await control.call('GET', `/applications/${app.id}/logs?tail=1`)).text === 'printed one\n',
      5000,
      'the line in the log',
    )
    t.pass("the function's output is the application log")
    const following = await fetch(`${control.url}/api/v1/applications/${app.id}/logs?follow=true&tail=0`)
    const lines = following.body!.getReader()
    await print(control, app, 'followed')
    let followed = ''
    while (!followed.includes('\n')) followed += Buffer.from((await lines.read()).value).toString('utf8')
    t.equal(followed, 'printed followed\n', 'followed: what the function writes from then on')
    await lines.cancel()

    // Redeploy: loaded again on its port; delete: unloaded, its port closed, its images gone.
    const pid = workerPid(control)
    t.equal((await control.call('POST', `/applications/${app.id}/deploy`)).status, 202)
    const second = await invoke(control, app.id, app.fnId, '/after')
    t.equal(second.answer.path, '/after', 'answered after the redeploy')
    t.equal(workerPid(control), pid, 'by the same worker')
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    t.equal(
      argv[argv.indexOf('--functions-cache-dir') + 1],
      join(control.store.dataDir, 'runtime', 'worker', 'functions'),
      "compiled functions are kept in the data directory, for the next build's compile",
    )
    t.ok(argv.includes('--baseline-first'), "a new build answers from Winch's code first by default")
    t.equal((await deploymentOf(control, app.id))?.internalUrl, deployment?.internalUrl, 'on the same port')
    t.equal((await control.call('DELETE', `/applications/${app.id}`)).status, 204)
    await t.rejects(fetch(`${String(deployment?.internalUrl)}/`), 'deleting the application closed its port')
    t.notOk(existsSync(join(control.store.dataDir, 'runtime', 'images', 'hello')), '...and removed its images')
    t.same(readdirSync(join(control.store.dataDir, 'runtime', 'worker', 'wasm')), [], '...and its pulled wasm')
  },
)

t.test('a compile error: failed, the termination log as error, the log kept', async (t) => {
  const { control } = await startLocal(t)
  const app = await jsApp(control, 'broken', 'MODE:fail')
  const failed = await untilBuild(control, app.id, (await build(control, app.id)).id, 'failed')
  t.equal(failed.error, 'compile error in functions/hello/index.js line 3: Expected ";" but found "world"')
  t.equal(failed.imageRef, null)
  const log = await control.call('GET', `/applications/${app.id}/builds/${failed.id}/logs`)
  t.match(log.text, /index\.js:3:7: ERROR/)
  t.equal(await deploymentOf(control, app.id), null, 'nothing deployed')
  const crashed = await jsApp(control, 'crash', 'MODE:crash')
  const lastWords = await untilBuild(control, crashed.id, (await build(control, crashed.id)).id, 'failed')
  t.match(lastWords.error, /last words$/, 'no termination log: the end of the log, as in a cluster')
})

t.test(
  "each application's builds share a dependency cache of its own, private, gone with the application",
  async (t) => {
    const { control } = await startLocal(t)
    const cacheOf = async (appId: string): Promise<string> => {
      const failed = await untilBuild(control, appId, (await build(control, appId)).id, 'failed')
      const log = await control.call('GET', `/applications/${appId}/builds/${failed.id}/logs`)
      return /^dependency cache (.*)$/m.exec(log.text)?.[1] ?? ''
    }
    const shop = await jsApp(control, 'shop', 'MODE:fail')
    const blog = await jsApp(control, 'blog', 'MODE:fail')
    const first = await cacheOf(shop.id)
    t.equal(
      first,
      join(control.store.dataDir, 'runtime', 'dependencies', 'shop'),
      "the builder is told the application's own directory",
    )
    t.equal(await cacheOf(shop.id), first, 'the next build of the application gets the same one')
    const other = await cacheOf(blog.id)
    t.not(other, first, 'another application gets another')
    t.equal(statSync(first).mode & 0o777, 0o700, 'readable by the control plane alone')
    t.equal((await control.call('DELETE', `/applications/${shop.id}`)).status, 204)
    t.notOk(existsSync(first), 'deleted with its application')
    t.ok(existsSync(other), "another application's stays")
  },
)

t.test('at most --local-builds at once, the rest pending in order; past --build-timeout a build fails', async (t) => {
  const { control } = await startLocal(t, ['--local-builds', '1', '--build-timeout', '2s'])
  const slow = await jsApp(control, 'slow', 'MODE:sleep')
  const quick = await jsApp(control, 'quick')
  const first = await build(control, slow.id)
  await untilBuild(control, slow.id, first.id, 'running')
  const second = await build(control, quick.id)
  t.equal(
    ((await control.call('GET', `/applications/${quick.id}/builds/${second.id}`)).body as Build).status,
    'pending',
    'it waits for the slot',
  )
  const failed = await untilBuild(control, slow.id, first.id, 'failed')
  t.equal(failed.error, 'DeadlineExceeded: the build ran longer than 2s (PLATFORM_BUILD_TIMEOUT)')
  await untilBuild(control, quick.id, second.id, 'succeeded')
  t.ok(
    control.logs.some((l) => l.msg === 'build finished' && l.buildId === second.id),
    'the queued build ran after the slot freed',
  )
})

t.test("queued builds take turns across tenants: one tenant's many do not hold back another's first", async (t) => {
  const { control } = await startLocal(t, ['--local-builds', '1', '--build-timeout', '2s'])
  const local = control.server.local as NonNullable<typeof control.server.local>
  const apps = { red: await jsApp(control, 'red'), blue: await jsApp(control, 'blue') }
  // Queued as the route queues them, with the tenant the application's row would carry (a token's
  // claim; authentication is off here, so every application through the API is the default's).
  const queue = async (tenant: 'red' | 'blue', mode = ''): Promise<string> => {
    const row = await createBuild(control.server.db, apps[tenant].id)
    if (row === null) throw new Error('no build row')
    const app = { id: apps[tenant].id, name: tenant, clusterName: tenant, language: 'js' as const, tenant }
    local.builds.start(app, row.id, local.imageRefFor(app, row.id), gzipSync(`// MODE:${mode}\n`))
    return row.id
  }
  const first = await queue('red', 'sleep')
  await untilBuild(control, apps.red.id, first, 'running')
  const redSecond = await queue('red')
  const redThird = await queue('red')
  const blueFirst = await queue('blue')
  await untilBuild(control, apps.red.id, redThird, 'succeeded')
  const order = control.logs.filter((line) => line.msg === 'build running').map((line) => line.buildId)
  t.same(
    order,
    [first, blueFirst, redSecond, redThird],
    "blue's build went before red's queued ones, red's in their order",
  )
})

t.test(
  "past --max-tenant-builds a tenant's next build answers 429 with Retry-After; another tenant's still starts",
  async (t) => {
    const { control } = await startLocal(t, [
      '--local-builds',
      '1',
      '--max-tenant-builds',
      '2',
      '--build-timeout',
      '5s',
    ])
    const slow = await jsApp(control, 'slow', 'MODE:sleep')
    const other = await jsApp(control, 'other')
    const first = await build(control, slow.id)
    await untilBuild(control, slow.id, first.id, 'running')
    await build(control, other.id)
    const refused = await control.call('POST', `/applications/${other.id}/builds`)
    t.equal(refused.status, 429)
    t.equal(refused.headers.get('retry-after'), '30')
    t.same(refused.body, {
      error:
        'this tenant has 2 builds running or queued, at most 2 (PLATFORM_MAX_TENANT_BUILDS): start this one when one has finished',
    })
    // Another tenant's application, started as the route starts it (auth is off here, so the API
    // serves one tenant only).
    const blue = await jsApp(control, 'blue')
    await control.server.db.query("UPDATE applications SET tenant = 'blue' WHERE id = $1", [blue.id])
    const deps = {
      db: control.server.db,
      config: control.config,
      runtime: control.server.runtime,
      deployments: control.server.reconciler,
    }
    const started = await startBuild(deps, {
      id: blue.id,
      name: 'blue',
      clusterName: 'blue',
      language: 'js',
      tenant: 'blue',
    })
    t.equal(started.status, 'pending', "another tenant's build is queued, not refused")
  },
)

t.test(
  'a restart fails the builds that were running and brings deployed applications back up; shutdown leaves no process',
  async (t) => {
    const first = await startLocal(t)
    const app = await jsApp(first.control, 'hello')
    const ok = await untilBuild(first.control, app.id, (await build(first.control, app.id)).id, 'succeeded')
    t.equal((await invoke(first.control, app.id, app.fnId)).status, 200)
    const firstWorker = workerPid(first.control)
    const stuck = await createBuild(first.control.server.db, app.id)
    await markRunning(first.control.server.db, stuck!.id)
    await first.control.close()
    t.notOk(alive(firstWorker), 'shutdown stopped the worker')

    const second = await startLocal(t, [], first.control.store)
    const lost = (await second.control.call('GET', `/applications/${app.id}/builds/${stuck!.id}`)).body as Build
    t.match(lost, {
      status: 'failed',
      error: 'the control plane restarted while this build was running; start it again',
    })
    const after = await invoke(second.control, app.id, app.fnId, '/again')
    t.equal(after.answer.path, '/again')
    t.equal((await deploymentOf(second.control, app.id))?.image, ok.imageRef, 'the newest image runs again')
    const secondWorker = workerPid(second.control)
    t.not(secondWorker, firstWorker)
    await second.control.close()
    t.notOk(alive(secondWorker))
  },
)

t.test("a build's end recorded by a process that died before its apply: the next start deploys it", async (t) => {
  const first = await startLocal(t)
  const built = await jsApp(first.control, 'built')
  const ok = await untilBuild(first.control, built.id, (await build(first.control, built.id)).id, 'succeeded')
  const late = await jsApp(first.control, 'late')
  // As the database holds it when the process dies between finishing the build and applying it.
  await first.control.server.db.query(
    "INSERT INTO builds (id, application_id, status, image_ref, finished_at) VALUES ($1, $2, 'succeeded', $3, now())",
    [randomUUID(), late.id, ok.imageRef],
  )
  await first.control.close()
  const second = await startLocal(t, [], first.control.store)
  t.equal((await invoke(second.control, late.id, late.fnId, '/late')).answer.path, '/late')
  t.match(((await second.control.call('GET', `/applications/${late.id}`)).body as { deployment: unknown }).deployment, {
    conditions: [{ type: 'Deployed', status: 'True', reason: 'Applied' }, { type: 'Ready' }],
  })
})

t.test('a language whose toolchain is missing answers 503 naming the tool; undeployed apps say so', async (t) => {
  const { control } = await startLocal(t)
  const go = await createApp(control, 'gopher', { language: 'go' })
  const refused = await control.call('POST', `/applications/${go.id}/builds`)
  t.equal(refused.status, 503)
  t.same(refused.body, {
    error: 'go builds need Go 1.21 or later: go is not on PATH (install Go, or build in a cluster)',
  })
  const rust = await createApp(control, 'crab', { language: 'rust' })
  // A machine without the toolchain root (this one may have made it for the builder tests).
  const saved = process.env.RUST_ROOT
  process.env.RUST_ROOT = t.testdir({})
  t.teardown(() => {
    if (saved === undefined) delete process.env.RUST_ROOT
    else process.env.RUST_ROOT = saved
  })
  t.match((await control.call('POST', `/applications/${rust.id}/builds`)).body, {
    error: /^rust builds need the wasm32 Rust toolchain root: none at /,
  })
  t.same((await control.call('GET', `/applications/${go.id}/builds`)).body, [], 'no build row was left')
  const invoked = await control.call('POST', `/applications/${go.id}/functions/${firstFunction(go).id}/invoke`, {
    json: { method: 'GET', path: '/' },
  })
  t.equal(invoked.status, 404)
  t.same(invoked.body, { error: 'application is not deployed: it has no successful build yet' })
  t.equal((await control.call('GET', `/applications/${go.id}/logs`)).status, 404)
  t.equal((await control.call('POST', `/applications/${go.id}/deploy`)).status, 409)
})

t.test('--runtime cluster without a cluster: every runtime endpoint answers 503 naming the settings', async (t) => {
  const control = await startTestControl(t, 'pglite', ['--dev-insecure-skip-auth', '--runtime', 'cluster'])
  t.equal(control.server.local, null)
  const app = await createApp(control, 'hello', { language: 'js' })
  const reply = await control.call('POST', `/applications/${app.id}/builds`)
  t.equal(reply.status, 503)
  t.same(reply.body, {
    error:
      'cluster not configured: set PLATFORM_KUBECONFIG (or run in a cluster), or PLATFORM_RUNTIME=local to build and run on this machine',
  })
})

t.test(
  'a worker a killed control plane left running is stopped at the next start; a pid file naming another process is not',
  async (t) => {
    const store = await freshStore(t, 'pglite')
    const workerDir = join(store.dataDir, 'runtime', 'worker')
    mkdirSync(workerDir, { recursive: true })
    // Its stdin kept open, as a control plane killed outright may leave it while its pipe lingers.
    const orphan = spawn(WORKER_BIN, ['--cache-dir', SHARED_COMPILED], {
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
    })
    t.teardown(() => {
      if (orphan.exitCode === null && orphan.signalCode === null) orphan.kill('SIGKILL')
    })
    const exited = new Promise((resolve) => orphan.once('exit', resolve))
    writeFileSync(join(workerDir, 'worker.pid'), `${orphan.pid}\n`)
    writeFileSync(join(workerDir, 'other.pid'), `${process.pid}\n`)
    const { control } = await startLocal(t, [], store)
    await exited
    t.ok(
      control.logs.some(
        (l) => l.msg === 'stopped a worker a previous control plane left running' && l.pid === orphan.pid,
      ),
      'the orphan was stopped and it is said',
    )
    t.ok(alive(process.pid), 'a pid file naming a process that is no worker of ours is only removed')
    t.notOk(existsSync(join(workerDir, 'other.pid')))
  },
)

t.test(
  'variables: a deployment gets the values variablesFor gives, on the build relocked with their names; POST deploy applies a change',
  async (t) => {
    const dir = scratch(t)
    const programs = writeStandIns(dir)
    const values = new Map<string, Record<string, string>>()
    const control = await startTestControl(
      t,
      'pglite',
      ['--dev-insecure-skip-auth', '--runtime', 'local', '--local-cache-dir', SHARED_COMPILED],
      {
        deps: {
          local: {
            ...programs,
            toolchains: toolchainCheck('', undefined, process.env.PATH),
            variablesFor: async (app) => values.get(app.id) ?? {},
          },
        },
      },
    )
    const app = await jsApp(control, 'vars')
    values.set(app.id, { greeting: 'first' })
    const done = await untilBuild(control, app.id, (await build(control, app.id)).id, 'succeeded')
    t.same(
      await variable(control, app, 'greeting'),
      { value: 'first' },
      'the value reaches the function at the deploy after a build',
    )
    const image = (await deploymentOf(control, app.id))?.image
    t.match(image, /^oci-layout:.*@sha256:[0-9a-f]{64}$/)
    t.not(image, done.imageRef, 'the build relocked to declare greeting')

    values.set(app.id, { greeting: 'second', colour: 'blue' })
    t.equal((await control.call('POST', `/applications/${app.id}/deploy`)).status, 202)
    // 202: the deploy goes on after the answer; the new lock (a new name) is the new image.
    await until(
      async () => {
        const deployment = await deploymentOf(control, app.id)
        return deployment?.image !== image && deployment?.ready === true
      },
      120_000,
      'the deploy with the new name applied and ready',
    )
    t.same(await variable(control, app, 'greeting'), { value: 'second' }, 'a new value, no rebuild')
    t.same(await variable(control, app, 'colour'), { value: 'blue' }, 'and a new name')
    t.notMatch(JSON.stringify(control.logs), /"first"|"second"|blue/, 'no value in the control plane log')
  },
)

t.test(
  'variables through PATCH: the stored values and the unsealed secret reach the running function at once, no rebuild',
  async (t) => {
    const { control } = await startLocal(t)
    const app = await jsApp(control, 'patched')
    await untilBuild(control, app.id, (await build(control, app.id)).id, 'succeeded')
    t.match(await variable(control, app, 'greeting'), { error: { tag: 'undefined' } }, 'no variables yet')

    const patched = await control.call('PATCH', `/applications/${app.id}`, {
      json: { variables: { greeting: { value: 'hej' }, token: { secret: 'sealed-value-0c4e' } } },
    })
    t.equal(patched.status, 200)
    t.match(patched.body, { deployment: { message: /^re-applied with the new settings/ } })
    await untilReady(control, app.id)
    t.same(await variable(control, app, 'greeting'), { value: 'hej' }, 'the value')
    t.same(await variable(control, app, 'token'), { value: 'sealed-value-0c4e' }, 'the secret, unsealed')

    await control.call('PATCH', `/applications/${app.id}`, {
      json: { variables: { greeting: { value: 'hallo' }, token: { secret: true } } },
    })
    await untilReady(control, app.id)
    t.same(await variable(control, app, 'greeting'), { value: 'hallo' }, 'a new value')
    t.same(await variable(control, app, 'token'), { value: 'sealed-value-0c4e' }, 'the kept secret')
    t.notOk(control.logText().includes('sealed-value-0c4e'), 'the secret is in no log line')
    t.notOk(patched.text.includes('sealed-value-0c4e'), 'nor in the answer')
    const appLog = await control.call('GET', `/applications/${app.id}/logs`)
    t.notOk(appLog.text.includes('sealed-value-0c4e'), "nor in the application's log")
  },
)

/** A redeploy is atomic: the previous version answers until the deployment says the new one is ready. */
async function untilReady(control: TestControl, appId: string): Promise<void> {
  await until(async () => (await deploymentOf(control, appId))?.ready === true, 60_000, 'the redeploy ready')
}

/** What the probe reads for the config key `name` through fermyon:spin/variables. */
async function variable(control: TestControl, app: { id: string; fnId: string }, name: string): Promise<unknown> {
  return (await invoke(control, app.id, app.fnId, `/?name=${name}`)).answer.variable
}

t.test(
  'a worker that dies is restarted after a backoff, the deployment says so meanwhile, and the next invoke reaches the new one',
  async (t) => {
    const { control } = await startLocal(t)
    const app = await jsApp(control, 'phoenix')
    await untilBuild(control, app.id, (await build(control, app.id)).id, 'succeeded')
    t.equal((await invoke(control, app.id, app.fnId)).status, 200)
    const pid = workerPid(control)
    process.kill(pid, 'SIGKILL')
    await until(async () => (await deploymentOf(control, app.id))?.ready === false, 5_000, 'the exit noticed')
    t.match(await deploymentOf(control, app.id), {
      ready: false,
      message: /^the worker exited \(SIGKILL\); restarting in 1000 ms/,
    })
    const next = await invoke(control, app.id, app.fnId, '/next')
    t.same(
      { status: next.status, path: next.answer.path },
      { status: 200, path: '/next' },
      'the invoke waited for the restarted worker',
    )
    t.not(workerPid(control), pid)
    t.equal((await deploymentOf(control, app.id))?.ready, true)
    t.match(
      (await control.call('GET', `/applications/${app.id}/logs`)).text,
      /the worker exited \(SIGKILL\)[^]*the worker restarted/,
      "the application's log says so",
    )
  },
)

t.test(
  'while the worker is down and cannot start, invoke answers 503 naming the worker and the deployment says why; it comes back once it can',
  async (t) => {
    const binary = join(scratch(t), 'worker')
    copyFileSync(WORKER_BIN, binary)
    chmodSync(binary, 0o755)
    const { control } = await startLocal(t, ['--local-worker', binary, '--invoke-timeout', '1s'])
    const app = await jsApp(control, 'unreachable')
    await untilBuild(control, app.id, (await build(control, app.id)).id, 'succeeded')
    t.equal((await invoke(control, app.id, app.fnId)).status, 200)
    rmSync(binary)
    process.kill(workerPid(control), 'SIGKILL')
    await until(async () => (await deploymentOf(control, app.id))?.ready === false, 5_000, 'the exit noticed')
    const refused = await control.call('POST', `/applications/${app.id}/functions/${app.fnId}/invoke`, {
      json: { method: 'GET', path: '/' },
    })
    t.equal(refused.status, 503)
    t.match(refused.body, {
      error:
        /^application unreachable: the worker (exited \(SIGKILL\)|could not start: the local runtime's worker is missing at .*); restarting in [0-9]+ ms/,
    })
    await until(
      async () =>
        /^the worker could not start: the local runtime's worker is missing at /.test(
          (await deploymentOf(control, app.id))?.message ?? '',
        ),
      10_000,
      'the failed restart said',
    )
    t.match(await deploymentOf(control, app.id), {
      ready: false,
      message: /\(PLATFORM_LOCAL_WORKER\); restarting in [0-9]+ ms \(restart [0-9]+\)$/,
    })

    copyFileSync(WORKER_BIN, binary)
    chmodSync(binary, 0o755)
    await until(async () => (await deploymentOf(control, app.id))?.ready === true, 30_000, 'the worker back')
    t.equal((await invoke(control, app.id, app.fnId)).status, 200, 'answered again')
  },
)

t.test(
  'scaled to zero: the deployment shows it ready with no replica running, its URL answers and it runs again',
  async (t) => {
    // The sweep runs each second against the real clock: the application goes idle within
    // seconds, and stays running for 3 s after a request, however slow the machine answers.
    const { control } = await startLocal(t, ['--local-idle-timeout', '3s'])
    const app = await jsApp(control, 'sleepy')
    await untilBuild(control, app.id, (await build(control, app.id)).id, 'succeeded')
    let deployment: Deployment | null = null
    await until(
      async () => /^idle/.test((deployment = await deploymentOf(control, app.id))?.message ?? ''),
      30_000,
      'the application idle',
    )
    t.match(deployment, {
      ready: true,
      replicas: 1,
      observedReplicas: 0,
      message: 'idle: unloaded after 3 s without a request; the next request loads it again',
    })
    const url = (deployment as unknown as Deployment).publicUrl ?? ''
    t.match(url, /^http:\/\/127\.0\.0\.1:\d+$/, 'its URL is still shown')
    const answer = await fetch(`${url}/woken`)
    t.same(
      { status: answer.status, path: ((await answer.json()) as ProbeAnswer).path },
      { status: 200, path: '/woken' },
      'and answers',
    )
    // Read once: a second later it may be idle again.
    await until(
      async () => (deployment = await deploymentOf(control, app.id))?.message === '1 of 1 replicas ready',
      5000,
      'running again',
    )
    t.match(deployment, { ready: true, observedReplicas: 1, publicUrl: url })
  },
)
