// wasmkube concurrency against the real control plane (PGlite, local runtime, nothing
// deployed): the values in force shown, one field changed keeping the other, the platform's
// largest refused in the server's words, --reset, --json, and misuse.
import t from 'tap'
import { createApp, startTestControl } from '../helpers/control.js'
import { wasmkube } from '../helpers/wasmkube.js'

t.test('show, set one field keeping the other, refuse above the platform, reset', async (t) => {
  const control = await startTestControl(t, 'pglite', [
    '--dev-insecure-skip-auth',
    '--runtime',
    'local',
    '--local-max-concurrent-requests',
    '10',
    '--local-max-queued-requests',
    '20',
  ])
  await createApp(control, 'hello')
  const cli = wasmkube(t, { WASMKUBE_SERVER: control.url })
  const shown = await cli(['concurrency', 'hello'])
  t.equal(shown.code, 0, shown.stderr)
  t.equal(shown.out, 'running at once: 10\nwaiting:         20\n', "the platform's values")

  const running = await cli(['concurrency', 'hello', '--max-running', '4'])
  t.equal(running.code, 0, running.stderr)
  t.match(running.stderr, /^concurrency of hello set\n/)
  t.equal(running.out, 'running at once: 4\nwaiting:         20\n')
  const queued = await cli(['concurrency', 'hello', '--max-queued', '0', '--json'])
  t.same(JSON.parse(queued.out), { maxRunning: 4, maxQueued: 0 }, 'the other field kept')

  const above = await cli(['concurrency', 'hello', '--max-running', '11'])
  t.equal(above.code, 1)
  t.match(
    above.stderr,
    /concurrency\.maxRunning: 11 is above the platform's largest 10 \(--local-max-concurrent-requests\)/,
  )

  const reset = await cli(['concurrency', 'hello', '--reset', '--json'])
  t.same(JSON.parse(reset.out), { maxRunning: 10, maxQueued: 20 }, "--reset: the platform's again")
  const list = (await control.call('GET', '/applications')).body as Array<{ id: string }>
  const stored = (await control.call('GET', `/applications/${list[0]?.id ?? ''}`)).body as { concurrency: unknown }
  t.same(stored.concurrency, { maxRunning: 10, maxQueued: 20 })
})

t.test('misuse exits 2', async (t) => {
  const cli = wasmkube(t, { WASMKUBE_SERVER: 'http://127.0.0.1:9' })
  for (const [args, reason] of [
    [['concurrency', 'a', '--max-running', 'many'], /--max-running: expected a whole number, not "many"/],
    [['concurrency', 'a', '--max-queued=-1'], /--max-queued: expected a whole number, not "-1"/],
    [['concurrency', 'a', '--reset', '--max-running', '2'], /--reset goes alone/],
    [['concurrency'], /missing arguments/],
  ] as Array<[string[], RegExp]>) {
    const outcome = await cli(args)
    t.equal(outcome.code, 2, args.join(' '))
    t.match(outcome.stderr, reason)
  }
})
