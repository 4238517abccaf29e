// The runtime of a control plane with neither a cluster nor --runtime local: whatever needs
// something to run is refused with the 503 that names the settings, and nothing else is.
import t from 'tap'
import { noRuntime } from '@session-relay/control/runtime/none'
import type { StoredApplication, StoredApplicationDetail } from '@session-relay/control/store/applications'

const app = {
  id: 'a',
  name: 'shop',
  clusterName: 'shop',
  tenant: 't',
  language: 'js',
  runtime: 'wasmkube',
  description: '',
  createdAt: '',
  settings: { replicas: null, autoscaling: null, resources: {}, variables: {} },
} as unknown as StoredApplication
const refusal = {
  status: 503,
  message: /^cluster not configured: set PLATFORM_KUBECONFIG \(or run in a cluster\), or PLATFORM_RUNTIME=local/,
}

t.test('every method that needs a runtime answers 503 naming the settings that give one', async (t) => {
  const runtime = noRuntime()
  const signal = new AbortController().signal
  await t.rejects(runtime.checkBuild('js', 10), refusal, 'checkBuild')
  await t.rejects(runtime.startBuild({ ...app, language: 'js' }, 'b', Buffer.alloc(0)), refusal, 'startBuild')
  await t.rejects(runtime.buildLog('b', false, { follow: false, signal }), refusal, 'the log of a build not finished')
  t.throws(() => runtime.checkDeploy(), refusal, 'checkDeploy')
  await t.rejects(
    runtime.deploy({ ...app, resources: {}, concurrency: { maxRunning: 1, maxQueued: 0 } }, 'image'),
    refusal,
    'deploy',
  )
  await t.rejects(
    runtime.invoke(app, { method: 'GET', path: '/', headers: {}, body: Buffer.alloc(0) }),
    refusal,
    'invoke',
  )
  await t.rejects(runtime.openLog(app, { follow: false, tailLines: undefined, signal }), refusal, 'openLog')
  await t.rejects(runtime.storeSecrets(app, new Map([['token', 'x']])), refusal, 'a secret value has nowhere to go')
})

t.test('what needs no runtime is answered', async (t) => {
  const runtime = noRuntime()
  await t.rejects(
    runtime.buildLog('b', true, { follow: false, signal: new AbortController().signal }),
    { status: 404, message: /the build's log is gone/ },
    'a finished build without a stored log: gone, not 503',
  )
  t.same(await runtime.storeSecrets(app, new Map()), {}, 'no secrets: nothing to store')
  t.equal(await runtime.deployment(app as StoredApplicationDetail, 'image'), null, 'nothing runs, so no deployment')
  t.equal(await runtime.drifted(app, {}), false)
  await runtime.remove(app)
  await runtime.close()
})
