// wasmkube deploy while the deployment cannot become ready (the local runtime's worker is
// missing): each reason the control plane gives is printed as it comes, and the command stops
// waiting as soon as it is stopped.
import { join } from 'node:path'
import t from 'tap'
import { localControl } from '../helpers/local-apps.js'
import { wasmkube } from '../helpers/wasmkube.js'

t.setTimeout(180_000)

t.test('deploy prints why the deployment is not ready, and stops when told', async (t) => {
  const control = await localControl(t, ['--local-worker', join(t.testdir(), 'no-worker')])
  const cli = wasmkube(t, { WASMKUBE_SERVER: control.url })
  const dir = join(t.testdir(), 'stuck')
  t.equal((await cli(['init', dir, '--language', 'js'])).code, 0)
  const stop = new AbortController()
  const outcome = await cli(['deploy', dir, '--name', 'stuck'], {
    signal: stop.signal,
    onStderr: (text) => {
      if (/not ready yet: .*worker is missing/.test(text)) stop.abort()
    },
  })
  t.match(outcome.stderr, /succeeded; waiting for the deployment\n/)
  t.match(outcome.stderr, /\nnot ready yet: [^\n]*the local runtime's worker is missing at [^\n]*no-worker/)
  t.equal(outcome.code, 1)
  t.match(outcome.stderr, /stopped waiting for the deployment to run the build: [^\n]*worker is missing/)
})
