// The whole path on one machine, with the real parts: the control plane on its embedded
// defaults (PGlite, no cluster), the builder program building the template into an OCI layout
// in the data directory, the worker serving it on a loopback port, and invoke through the API
// answering with the component's own words. One real build per language (each 6-25 s, ~600 MB),
// plus a compile error, which fails in the bundler before any component is made.
import t from 'tap'
import { templateFiles } from '@session-relay/spin/templates'
import { buildAndWait, createApp, firstFunction, startTestControl, until } from '../helpers/control.js'
import type { TestControl } from '../helpers/control.js'

const BUILD_TIMEOUT = 240_000
// Two tests of at most BUILD_TIMEOUT + 60 s each: the file may take both.
t.setTimeout(2 * (BUILD_TIMEOUT + 60_000))

// A new application's first function starts as the language's hello-world: no upload.
async function templateApp(
  control: TestControl,
  name: string,
  language: 'js' | 'ts',
): Promise<{ id: string; fnId: string; fnName: string }> {
  const app = await createApp(control, name, { language })
  const fn = firstFunction(app)
  return { id: app.id, fnId: fn.id, fnName: fn.name }
}

for (const language of ['js', 'ts'] as const) {
  t.test(
    `${language}: create, build, invoke on embedded defaults: the template's answer`,
    { timeout: BUILD_TIMEOUT + 60_000 },
    async (t) => {
      const control = await startTestControl(t, 'pglite')
      t.not(control.server.local, null, 'no cluster here: the local runtime')
      const app = await templateApp(control, `hello-${language}`, language)
      const started = Date.now()
      const build = await buildAndWait(t, control, app.id, BUILD_TIMEOUT)
      t.equal(build.status, 'succeeded', build.error ?? '')
      t.match(build.imageRef, /^oci-layout:\/.*\/runtime\/images\/hello-(js|ts)@sha256:[0-9a-f]{64}$/)
      t.comment(`${language} template build: ${Date.now() - started} ms`)
      // The worker compiles a new build at its first load (7-25 s, more on a loaded machine): past
      // the invoke timeout, an invoke would answer 503 meanwhile.
      const loadStarted = Date.now()
      await until(
        async () =>
          ((await control.call('GET', `/applications/${app.id}`)).body as { deployment: { ready: boolean } | null })
            .deployment?.ready === true,
        180_000,
        'the first load',
      )
      t.comment(`${language} first load (compile included): ${Date.now() - loadStarted} ms`)
      const invokeStarted = Date.now()
      const reply = await control.call('POST', `/applications/${app.id}/functions/${app.fnId}/invoke`, {
        json: { method: 'GET', path: '/hi' },
      })
      t.comment(`${language} first invoke: ${Date.now() - invokeStarted} ms`)
      t.equal(reply.status, 200)
      t.match(reply.body, { status: 200, body: `hello from ${app.fnName}\n`, bodyIsBase64: false })
      const warmStarted = Date.now()
      const warm = await control.call('POST', `/applications/${app.id}/functions/${app.fnId}/invoke`, {
        json: { method: 'GET', path: '/again' },
      })
      t.comment(`${language} warm invoke: ${Date.now() - warmStarted} ms`)
      t.match(warm.body, { status: 200, body: `hello from ${app.fnName}\n`, headers: { 'x-request-path': ['/again'] } })
      const view = (await control.call('GET', `/applications/${app.id}`)).body as {
        deployment: Record<string, unknown>
      }
      t.match(view.deployment, {
        image: build.imageRef,
        replicas: 1,
        ready: true,
        internalUrl: /^http:\/\/127\.0\.0\.1:[0-9]+$/,
      })
      t.equal((await control.call('GET', `/applications/${app.id}/logs`)).status, 200, 'the application log')

      if (language === 'js') {
        const put = await control.call('PUT', `/applications/${app.id}/functions/${app.fnId}/source`, {
          json: {
            files: {
              ...templateFiles('js', app.fnName),
              'src/index.js': "addEventListener('fetch', (event) => {\n  event.respondWith(new Response('x')\n})\n",
            },
          },
        })
        t.equal(put.status, 200)
        const broken = await buildAndWait(t, control, app.id, BUILD_TIMEOUT)
        t.equal(broken.status, 'failed')
        t.match(
          broken.error,
          `functions/${app.fnName}/src/index.js:3:1: error: Expected ")" but found "}"`,
          'the error names the file and line',
        )
        const log = await control.call('GET', `/applications/${app.id}/builds/${broken.id}/logs`)
        t.match(log.text, `functions/${app.fnName}/src/index.js:3:1: error:`, 'so does the log')
        const still = await control.call('POST', `/applications/${app.id}/functions/${app.fnId}/invoke`, {
          json: { method: 'GET', path: '/' },
        })
        t.match(still.body, { status: 200, body: `hello from ${app.fnName}\n` }, 'the last good build keeps running')
      }
    },
  )
}
