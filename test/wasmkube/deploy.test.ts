// wasmkube against the real control plane on its embedded defaults (PGlite, local runtime):
// init, deploy with one real js build, invoke, variables, logs, builds, apps, a failed build
// (which fails in the bundler within a second or two), delete. Auth is off here; login and
// tokens are in auth.test.ts.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { startTestControl } from '../helpers/control.js'
import { wasmkube } from '../helpers/wasmkube.js'

// One real js build (10-60 s on a busy machine) and a failing one, plus the waits around them.
t.setTimeout(420_000)

t.test('init, deploy, invoke, vars, logs, builds, apps, a failed build, delete', async (t) => {
  const control = await startTestControl(t, 'pglite')
  const cli = wasmkube(t, { WASMKUBE_SERVER: control.url })
  const scratch = t.testdir()
  const dir = join(scratch, 'hello')
  t.equal((await cli(['init', dir, '--language', 'js'])).code, 0)
  // The template, plus answers that are not a plain 200 text.
  const index = join(dir, 'src', 'index.js')
  writeFileSync(
    index,
    readFileSync(index, 'utf8').replace(
      "  const greeting = get('greeting')",
      [
        "  if (path === '/teapot') return new Response('short and stout\\n', { status: 418 })",
        "  if (path === '/echo') return new Response(await request.arrayBuffer(), { headers: { 'content-type': 'application/octet-stream' } })",
        "  const greeting = get('greeting')",
      ].join('\n'),
    ),
  )

  const deployed = await cli(['deploy', dir, '--name', 'hello'])
  t.equal(deployed.code, 0, deployed.stderr)
  t.match(deployed.stderr, /created the js application hello/)
  t.match(deployed.stderr, /build [0-9a-f-]+ started\n/)
  t.match(deployed.stderr, /succeeded; waiting for the deployment/)
  const app = (await control.call('GET', '/applications')).body as Array<{ id: string; name: string }>
  const id = app.find((a) => a.name === 'hello')?.id ?? ''
  const view = (await control.call('GET', `/applications/${id}`)).body as {
    deployment: { ready: boolean; publicUrl: string }
  }
  t.equal(view.deployment.ready, true, 'deploy returned once the deployment was ready')
  t.equal(deployed.out, `${view.deployment.publicUrl}\n`, "the deployment's URL on stdout, alone")
  t.equal(
    await (await fetch(`${view.deployment.publicUrl}/direct`)).text(),
    'hello from hello\n',
    'and it answers there',
  )

  const hello = await cli(['invoke', 'hello', '/hi'])
  t.equal(hello.code, 0)
  t.equal(hello.out, 'hello from hello\n')
  t.match(hello.stderr, /^200 in [0-9.]+ ms\n$/)

  const teapot = await cli(['invoke', 'hello', '/teapot'])
  t.equal(teapot.code, 1, 'a non-2xx answer exits 1')
  t.equal(teapot.out, 'short and stout\n')
  t.match(teapot.stderr, /^418 /)

  const bytes = Buffer.from([0, 1, 2, 0xff, 0xfe, 10])
  const file = join(scratch, 'body.bin')
  writeFileSync(file, bytes)
  const echoed = await cli(['invoke', 'hello', '/echo', '--data', `@${file}`])
  t.equal(echoed.code, 0)
  t.same(echoed.stdout, bytes, 'a binary body comes out as its bytes')
  const asJson = await cli(['invoke', 'hello', '/echo', '-d', 'hi', '-X', 'PUT', '-H', 'x-a: 1', '--json'])
  t.match(JSON.parse(asJson.out), { status: 200, bodyIsBase64: true, body: Buffer.from('hi').toString('base64') })

  const logs = await cli(['logs', 'hello', '--tail', '50'])
  t.equal(logs.code, 0)
  t.match(logs.out, 'hello: GET /hi')
  const following = new AbortController()
  const followed = cli(['logs', 'hello', '-f'], {
    signal: following.signal,
    onStdout: (text) => {
      if (text.includes('hello: GET /while-following')) following.abort()
    },
  })
  await cli(['invoke', 'hello', '/while-following'])
  t.equal((await followed).code, 0, 'a followed log shows new lines; Ctrl-C ends it with exit 0')

  const set = await cli(['vars', 'set', 'hello', 'greeting=hej', 'api_key=s3cret-value', '--secret'])
  t.equal(set.code, 0, set.stderr)
  const setPlain = await cli(['vars', 'set', 'hello', 'greeting=hej'])
  t.equal(setPlain.code, 0, setPlain.stderr)
  t.equal((await cli(['invoke', 'hello'])).out, 'hej from hello\n', 'the new value without a rebuild')
  const listed = await cli(['vars', 'list', 'hello'])
  t.match(listed.out, /greeting\s+hej/)
  t.match(listed.out, /api_key\s+\(secret\)/)
  const listedJson = await cli(['vars', 'list', 'hello', '--json'])
  t.same(JSON.parse(listedJson.out), { greeting: { value: 'hej' }, api_key: { secret: true } })
  t.notMatch(listed.out + listedJson.out + set.stderr, 's3cret', 'a secret value is never shown')
  t.equal((await cli(['vars', 'unset', 'hello', 'greeting'])).code, 0)
  t.equal((await cli(['invoke', 'hello'])).out, 'hello from hello\n')
  t.same(
    JSON.parse((await cli(['vars', 'list', 'hello', '--json'])).out),
    { api_key: { secret: true } },
    'the secret kept its place',
  )
  const unsetMissing = await cli(['vars', 'unset', 'hello', 'nope'])
  t.equal(unsetMissing.code, 2)

  const builds = await cli(['builds', 'hello'])
  t.match(builds.out, /^ID\s+STATUS\s+CREATED\s+ERROR\n[0-9a-f-]+\s+succeeded\s/)
  const apps = await cli(['apps', '--json'])
  t.match(JSON.parse(apps.out), [{ name: 'hello', language: 'js', runtime: 'wasmkube' }])
  t.match((await cli(['apps'])).out, /^NAME\s+LANGUAGE\s+CREATED\nhello\s+js\s/)

  writeFileSync(index, "addEventListener('fetch', (event) => {\n  event.respondWith(new Response('x')\n})\n")
  const broken = await cli(['deploy', dir, '--name', 'hello'])
  t.equal(broken.code, 1, 'a failed build exits 1')
  t.match(
    broken.stderr,
    /wasmkube deploy: build [0-9a-f-]+ failed: .*src\/index\.js:3:1: error: Expected "\)" but found "}"/,
  )
  t.equal((await cli(['invoke', 'hello'])).out, 'hello from hello\n', 'the last good build still answers')
  const wrongLanguage = await cli(['deploy', dir, '--name', 'hello', '--language', 'go'])
  t.match(wrongLanguage.stderr, 'hello exists as a js application, not go')

  const missing = await cli(['invoke', 'nope'])
  t.equal(missing.code, 1)
  t.match(missing.stderr, `no application named "nope" on ${control.url}`)
  const noFunction = await cli(['invoke', 'hello', '--function', 'other'])
  t.match(noFunction.stderr, 'hello has no function "other": it has hello')

  t.equal((await cli(['delete', 'hello'])).code, 0)
  t.equal((await cli(['apps'])).out, 'NAME  LANGUAGE  CREATED\n')
  t.equal((await cli(['delete', 'hello'])).code, 1, 'deleting what is gone is refused')
})
