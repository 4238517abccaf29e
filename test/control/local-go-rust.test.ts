// Go and rust as a new user meets them, end to end through the control plane's HTTP API on its
// embedded defaults (PGlite, no cluster: the local runtime) with the real parts: create the
// application, upload the template's source, build (the builder program: stock Go for WAGI;
// Debian's rustc in the sandboxed chroot of .cache/rust-wasm, which `npm test` makes first),
// wait for the deployment in the wasmtime worker, and invoke: the template's answer. Then a
// compile error fails the build with the file and line while the last good build keeps
// answering. Needs Go on PATH, root and scripts/rust-wasm-root.sh (as builder-rust.test.ts).
//
// Each application's dependency cache (go's module and build caches, cargo's registry and
// target) is the one the local runtime keeps between an application's builds; here it is linked
// to the builder tests' .cache/test-{go,rust}-deps so it survives between runs too: the first
// run on a fresh clone compiles Go's standard library for wasip1 (81 s at load 15) and the rust
// template's crates (7 min at load 15), later runs reuse them (docs/testing.md). Go's caches and
// cargo's locks make the two files' builds safe to share them at once.
import { mkdirSync, readdirSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { templateFiles } from '@session-relay/spin/templates'
import { buildAndWait, createApp, firstFunction, startTestControl, until } from '../helpers/control.js'

const BUILD_TIMEOUT = 600_000
const LOAD_TIMEOUT = 180_000
t.setTimeout(2 * (2 * BUILD_TIMEOUT + LOAD_TIMEOUT + 60_000))

const repo = fileURLToPath(new URL('../../', import.meta.url))

// The function's source with the compile error each language's user would meet first, and the
// reason the build must give for it: the file and line as the compiler names them.
const BROKEN = {
  go: {
    edit: (files: Record<string, string>, fn: string) => ({
      ...files,
      'main.go': (files['main.go'] as string).replace(
        `fmt.Fprintln(w, "hello from ${fn}")`,
        'fmt.Fprintln(w, undefinedName)',
      ),
    }),
    error: (fn: string) => new RegExp(`^function ${fn}: functions/${fn}/main\\.go:18:18: undefined: undefinedName$`),
  },
  rust: {
    edit: (files: Record<string, string>) => ({
      ...files,
      'src/lib.rs': (files['src/lib.rs'] as string).replace('.status(200)', '.status(undefined_name)'),
    }),
    error: (fn: string) =>
      new RegExp(
        `^function ${fn}: functions/${fn}/src/lib\\.rs:10:17: error\\[E0425\\]: cannot find value \`undefined_name\``,
      ),
  },
} as const

for (const language of ['go', 'rust'] as const) {
  t.test(
    `${language}: create, upload the template, build, invoke on the local runtime: the template's answer`,
    { timeout: 2 * BUILD_TIMEOUT + LOAD_TIMEOUT + 60_000 },
    async (t) => {
      const control = await startTestControl(t, 'pglite')
      t.not(control.server.local, null, 'no cluster here: the local runtime')
      const name = `hello-${language}`
      const app = await createApp(control, name, { language })
      const fn = firstFunction(app)
      // The default tenant's application keeps its name in the runtime; its cache is linked in.
      const cache = join(repo, '.cache', `test-${language}-deps`)
      mkdirSync(cache, { recursive: true })
      const dependencies = join(control.store.dataDir, 'runtime', 'dependencies')
      mkdirSync(dependencies, { recursive: true })
      symlinkSync(cache, join(dependencies, name))

      // What a user who wrote the function on their machine uploads: the template's files.
      const files = templateFiles(language, fn.name)
      const put = await control.call('PUT', `/applications/${app.id}/functions/${fn.id}/source`, { json: { files } })
      t.equal(put.status, 200, 'the source is stored')

      const started = Date.now()
      const build = await buildAndWait(t, control, app.id, BUILD_TIMEOUT)
      t.equal(build.status, 'succeeded', build.error ?? '')
      t.match(build.imageRef, new RegExp(`^oci-layout:/.*/runtime/images/${name}@sha256:[0-9a-f]{64}$`))
      t.comment(`${language} template build: ${Date.now() - started} ms`)
      t.same(readdirSync(dependencies), [name], "the build used the application's dependency cache, the linked one")
      const loadStarted = Date.now()
      await until(
        async () =>
          ((await control.call('GET', `/applications/${app.id}`)).body as { deployment: { ready: boolean } | null })
            .deployment?.ready === true,
        LOAD_TIMEOUT,
        'the first load',
      )
      t.comment(`${language} first load (compile included): ${Date.now() - loadStarted} ms`)

      const reply = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, {
        json: { method: 'GET', path: '/hi' },
      })
      t.equal(reply.status, 200, 'invoke answers')
      t.match(reply.body, {
        status: 200,
        body: `hello from ${fn.name}\n`,
        bodyIsBase64: false,
        headers: { 'x-request-path': ['/hi'] },
      })
      const view = (await control.call('GET', `/applications/${app.id}`)).body as {
        deployment: Record<string, unknown>
      }
      t.match(view.deployment, { image: build.imageRef, replicas: 1, ready: true })
      // The function writes `{function}: ...` to stderr: the application's log.
      await until(
        async () => (await control.call('GET', `/applications/${app.id}/logs`)).text.includes(`${fn.name}: `),
        10_000,
        "the function's line in the application log",
      )
      t.pass("the function's stderr is the application's log")

      const put2 = await control.call('PUT', `/applications/${app.id}/functions/${fn.id}/source`, {
        json: { files: BROKEN[language].edit(files, fn.name) },
      })
      t.equal(put2.status, 200, 'the broken source is stored')
      const broken = await buildAndWait(t, control, app.id, BUILD_TIMEOUT)
      t.equal(broken.status, 'failed')
      t.match(broken.error, BROKEN[language].error(fn.name), 'the error names the file and line')
      const log = await control.call('GET', `/applications/${app.id}/builds/${broken.id}/logs`)
      t.match(
        log.text,
        language === 'go' ? 'main.go:18:18: undefined: undefinedName' : /src\/lib\.rs:10:17: error\[E0425\]/,
        'so does the log',
      )
      const still = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, {
        json: { method: 'GET', path: '/' },
      })
      t.match(still.body, { status: 200, body: `hello from ${fn.name}\n` }, 'the last good build keeps answering')
    },
  )
}
