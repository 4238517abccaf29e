// PATCH of an application running on this machine (a stand-in builder, the real worker): the
// application is loaded again at once with the new settings and the deployment's message says
// so; no secret value reaches an answer or a log line.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { writeStandIns } from '../fixtures/local-programs.js'
import { toolchainCheck } from '@session-relay/control/local/programs'
import { createApp, firstFunction, startTestControl, until } from '../helpers/control.js'
import { SHARED_COMPILED } from '../helpers/worker-probe.js'

const SECRET = 'tr0ub4dor-and-3-local'

t.test('a running application is reloaded by a PATCH, and says so; no secret in any answer or log', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'local-settings-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const control = await startTestControl(
    t,
    'pglite',
    ['--dev-insecure-skip-auth', '--runtime', 'local', '--log-level', 'debug', '--local-cache-dir', SHARED_COMPILED],
    { deps: { local: { ...writeStandIns(dir), toolchains: toolchainCheck('', undefined, process.env.PATH) } } },
  )
  const app = await createApp(control, 'hello', { language: 'js' })
  const fn = firstFunction(app)
  const started = (await control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
  await until(
    async () =>
      ((await control.call('GET', `/applications/${app.id}`)).body as { deployment: { ready: boolean } | null })
        .deployment?.ready === true,
    20_000,
    `build ${started.id} deployed`,
  )
  // What the probe function reads for the config key `greeting`.
  const greeting = async (): Promise<unknown> => {
    const reply = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, {
      json: { method: 'GET', path: '/?name=greeting' },
    })
    return (JSON.parse((reply.body as { body: string }).body) as { variable: unknown }).variable
  }
  t.match(await greeting(), { error: { tag: 'undefined' } })

  const reply = await control.call('PATCH', `/applications/${app.id}`, {
    json: { variables: { token: { secret: SECRET }, greeting: { value: 'hi' } } },
  })
  t.equal(reply.status, 200)
  t.match(reply.body, {
    variables: { token: { secret: true }, greeting: { value: 'hi' } },
    deployment: { message: /^re-applied with the new settings; / },
  })
  t.notMatch(reply.text, SECRET)
  // The previous version answers until the new one is ready.
  await until(
    async () =>
      ((await control.call('GET', `/applications/${app.id}`)).body as { deployment: { ready: boolean } | null })
        .deployment?.ready === true,
    20_000,
    'loaded again',
  )
  t.same(await greeting(), { value: 'hi' }, 'the application was loaded again with the value')

  const referenced = await control.call('PATCH', `/applications/${app.id}`, {
    json: { variables: { token: { secret: true }, db: { secretRef: { name: 'db', key: 'password' } } } },
  })
  t.match(
    referenced.body,
    { deployment: { message: /; not given to the function here \(a secretRef needs a cluster\): db$/ } },
    'a secretRef the runtime here cannot resolve is named',
  )

  const described = await control.call('PATCH', `/applications/${app.id}`, { json: { description: 'only words' } })
  t.notMatch(
    (described.body as { deployment: { message: string } }).deployment.message,
    /re-applied/,
    'a description alone restarts nothing',
  )

  await control.close()
  t.notMatch(control.logText(), SECRET, 'the secret value is in no log line')
})

t.test(
  "memoryLimit bounds each instance of its application: past it a request fails, another application's larger limit serves it",
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'local-memory-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    // The platform's limit applies to an application that sets none.
    const control = await startTestControl(
      t,
      'pglite',
      [
        '--dev-insecure-skip-auth',
        '--runtime',
        'local',
        '--local-cache-dir',
        SHARED_COMPILED,
        '--resource-memory-limit',
        '64Mi',
      ],
      { deps: { local: { ...writeStandIns(dir), toolchains: toolchainCheck('', undefined, process.env.PATH) } } },
    )
    const deployed = async (name: string): Promise<{ id: string; fnId: string }> => {
      const app = await createApp(control, name, { language: 'js' })
      await control.call('POST', `/applications/${app.id}/builds`)
      await until(
        async () =>
          ((await control.call('GET', `/applications/${app.id}`)).body as { deployment: { ready: boolean } | null })
            .deployment?.ready === true,
        20_000,
        `${name} deployed`,
      )
      return { id: app.id, fnId: firstFunction(app).id }
    }
    // The probe allocates `mb` MiB in 1 MiB arrays and says so.
    const allocate = async (
      app: { id: string; fnId: string },
      mb: number,
    ): Promise<{ status: number; body: string }> => {
      const reply = await control.call('POST', `/applications/${app.id}/functions/${app.fnId}/invoke`, {
        json: { method: 'GET', path: `/alloc?mb=${mb}` },
      })
      return reply.body as { status: number; body: string }
    }
    const small = await deployed('small')
    const large = await deployed('large')
    const patched = await control.call('PATCH', `/applications/${large.id}`, {
      json: { resources: { memoryLimit: '256Mi' } },
    })
    t.match(patched.body, {
      resources: { memoryLimit: '256Mi' },
      deployment: { message: /^re-applied with the new settings; / },
    })
    await until(
      async () =>
        ((await control.call('GET', `/applications/${large.id}`)).body as { deployment: { ready: boolean } | null })
          .deployment?.ready === true,
      20_000,
      'large loaded again',
    )

    t.match(await allocate(small, 100), { status: 500, body: 'the function failed\n' }, 'past 64Mi: the documented 500')
    t.match(await allocate(small, 8), { status: 200, body: 'allocated 8 MiB\n' }, 'within it: served')
    t.match(
      await allocate(large, 100),
      { status: 200, body: 'allocated 100 MiB\n' },
      'the other application, at 256Mi, is served the same request',
    )
  },
)
