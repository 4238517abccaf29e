// Variables and secrets on the local runtime, end to end through the HTTP API with the real
// parts (one real build of the js template, which reads `greeting`; the real worker): set a value
// and a secret, build, invoke and get the value; change it and invoke again without a rebuild;
// then make `greeting` itself a secret, which the function shows. Every log line of the control
// plane, the build log, the application's log, every HTTP answer and the database's files are
// searched: the secrets are in none of them, but for the function's own answer showing its
// secret greeting.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { createApp, firstFunction, startTestControl, until } from '../helpers/control.js'
import type { CallOptions, Reply } from '../helpers/control.js'

const BUILD_TIMEOUT = 240_000
// Never shown by the function: in nothing at all.
const TOKEN = 'token-secret-value-3e9b71'
// Shown by the function as its greeting: in its invoke answer alone.
const GREETING_SECRET = 'greeting-secret-value-a04c'

type Build = { id: string; status: string; error: string | null }

// tap's loader hooks (NODE_OPTIONS) would load into every builder and host the runtime starts.
const nodeOptions = process.env.NODE_OPTIONS
delete process.env.NODE_OPTIONS
t.teardown(() => {
  if (nodeOptions !== undefined) process.env.NODE_OPTIONS = nodeOptions
})

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    const stat = statSync(path, { throwIfNoEntry: false })
    return stat === undefined ? [] : stat.isDirectory() ? filesUnder(path) : stat.isFile() ? [path] : []
  })
}

t.test(
  'local: a variable and a secret reach the template; a new value without a rebuild; no secret in any log or answer',
  { timeout: BUILD_TIMEOUT + 60_000 },
  async (t) => {
    const control = await startTestControl(t, 'pglite', ['--dev-insecure-skip-auth', '--runtime', 'local'])
    const answers: Reply[] = []
    const call = async (method: string, path: string, opts?: CallOptions): Promise<Reply> => {
      const reply = await control.call(method, path, opts)
      answers.push(reply)
      return reply
    }
    const app = await createApp(control, 'vars', { language: 'js' })
    const fn = firstFunction(app)
    // A redeploy is atomic: the previous version answers until the deployment says the new one is ready.
    const untilReady = async (): Promise<void> =>
      until(
        async () =>
          ((await control.call('GET', `/applications/${app.id}`)).body as { deployment: { ready: boolean } | null })
            .deployment?.ready === true,
        60_000,
        'the redeploy ready',
      )
    const invoke = async (): Promise<Reply> =>
      call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, { json: { method: 'GET', path: '/' } })

    const set = await call('PATCH', `/applications/${app.id}`, {
      json: { variables: { greeting: { value: 'howdy' }, token: { secret: TOKEN } } },
    })
    t.equal(set.status, 200, set.text)
    t.match(set.body, { variables: { greeting: { value: 'howdy' }, token: { secret: true } } })

    const started = await call('POST', `/applications/${app.id}/builds`)
    t.equal(started.status, 202, started.text)
    const buildId = (started.body as Build).id
    let build: Build | undefined
    await until(
      async () => {
        build = (await call('GET', `/applications/${app.id}/builds/${buildId}`)).body as Build
        return build.status === 'succeeded' || build.status === 'failed'
      },
      BUILD_TIMEOUT,
      'the build to end',
    )
    t.equal(build?.status, 'succeeded', build?.error ?? '')
    // The worker compiles a new build at its first load (7-25 s, more on a loaded machine): past
    // the invoke timeout, an invoke would answer 503 meanwhile.
    await until(
      async () =>
        ((await control.call('GET', `/applications/${app.id}`)).body as { deployment: { ready: boolean } | null })
          .deployment?.ready === true,
      180_000,
      'the first load',
    )
    t.match(
      (await invoke()).body,
      { status: 200, body: `howdy from ${fn.name}\n` },
      'the value, through the variables interface',
    )

    let since = Date.now()
    const changed = await call('PATCH', `/applications/${app.id}`, {
      json: { variables: { greeting: { value: 'bonjour' }, token: { secret: true } } },
    })
    t.match(changed.body, { deployment: { message: /^re-applied with the new settings/ } })
    await untilReady()
    t.match((await invoke()).body, { status: 200, body: `bonjour from ${fn.name}\n` }, 'a new value without a rebuild')
    t.comment(`new value: PATCH to the first answer ${Date.now() - since} ms`)

    since = Date.now()
    await call('PATCH', `/applications/${app.id}`, {
      json: { variables: { greeting: { secret: GREETING_SECRET }, token: { secret: true } } },
    })
    await untilReady()
    const shown = await invoke()
    t.match(
      shown.body,
      { status: 200, body: `${GREETING_SECRET} from ${fn.name}\n` },
      'a secret value, unsealed for the host',
    )
    t.comment(`value to secret: PATCH to the first answer ${Date.now() - since} ms`)
    const view = await call('GET', `/applications/${app.id}`)
    t.match(view.body, {
      variables: { greeting: { secret: true }, token: { secret: true } },
      builds: [{ id: buildId }],
    })
    t.equal((view.body as { builds: unknown[] }).builds.length, 1, 'one build in all')

    const buildLog = await call('GET', `/applications/${app.id}/builds/${buildId}/logs`)
    t.equal(buildLog.status, 200)
    const appLog = await call('GET', `/applications/${app.id}/logs`)
    t.equal(appLog.status, 200)
    t.match(appLog.text, `${fn.name}: GET /`, "the application's log holds the function's output")

    const logs = control.logText()
    t.ok(logs.length > 0)
    for (const [what, text] of [
      ['the control plane log', logs],
      ['the build log', buildLog.text],
      ['the application log', appLog.text],
    ] as const) {
      t.notOk(text.includes(TOKEN) || text.includes(GREETING_SECRET), `no secret in ${what}`)
    }
    const leaking = answers.filter((reply) => {
      const text = reply === shown ? reply.text.replace(`${GREETING_SECRET} from`, '') : reply.text
      return text.includes(TOKEN) || text.includes(GREETING_SECRET)
    })
    t.same(
      leaking.map((reply) => reply.text),
      [],
      `no secret in any of the ${answers.length} answers`,
    )
    // Stopped first: the worker's background compile writes its function cache through files
    // renamed into place, which a scan meanwhile could list and then not find.
    await control.close()
    const stored = filesUnder(control.store.dataDir).filter((path) => {
      const bytes = readFileSync(path)
      return bytes.includes(TOKEN) || bytes.includes(GREETING_SECRET)
    })
    t.same(stored, [], 'no secret in clear in the data directory (database, builds, hosts)')
  },
)
