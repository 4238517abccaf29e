// The whole path in a (fake) cluster, with real parts wherever they run here: the control plane
// against the fake Kubernetes API, whose Job handling runs the builder program with the Job's
// environment and the Secret's archive, pushing to a real distribution registry with htpasswd
// credentials; a fake spin-operator whose shim pulls the SpinApp's image from that registry,
// checks it and serves it with the host; and invoke through the control plane and the API
// server's service proxy, answered by the component; then a variable reaches it without a
// rebuild (relocked image, SpinApp variables from a Secret). One real js build.
import t from 'tap'
import { templateFiles } from '../../builders/src/templates.js'
import { relockReference } from '../../common/src/spin/relock.js'
import { operateSpinApps, runBuildJobs } from '../fixtures/kube-runners.js'
import { SECRETS } from '../fixtures/kube-secrets.js'
import { SPINAPPS } from '../fixtures/kube-spinapps.js'
import { startFakeCluster } from '../fixtures/kube.js'
import { startClusterControl, tempDir, NAMESPACE } from '../helpers/cluster.js'
import { createApp, firstFunction, until } from '../helpers/control.js'
import { dockerConfigDir, startRegistry } from '../helpers/registry.js'

const BUILD_TIMEOUT = 240_000
// One test of at most BUILD_TIMEOUT + 60 s, and the file's own start.
t.setTimeout(BUILD_TIMEOUT + 120_000)

type Build = { id: string; status: string; imageRef: string | null; error: string | null }

t.test('js in the cluster: Job → builder → registry → SpinApp → shim → invoke answers with the template', { timeout: BUILD_TIMEOUT + 60_000 }, async (t) => {
  const registry = await startRegistry(t, { auth: true })
  const dockerConfig = await dockerConfigDir(t, registry.host, registry.credentials!)
  const fake = await startFakeCluster(t, tempDir(t), NAMESPACE)
  runBuildJobs(t, fake, { dockerConfig })
  operateSpinApps(t, fake, { dockerConfig })
  const { control } = await startClusterControl(t, 'pglite', { fake, flags: ['--image-repository', `${registry.host}/apps`] })

  const app = await createApp(control, 'hello', { language: 'js' })
  const fn = firstFunction(app)
  t.equal((await control.call('PUT', `/applications/${app.id}/functions/${fn.id}/source`, { json: { files: templateFiles('js', fn.name) } })).status, 200)
  const started = (await control.call('POST', `/applications/${app.id}/builds`)).body as Build
  let build: Build | undefined
  await until(async () => {
    build = (await control.call('GET', `/applications/${app.id}/builds/${started.id}`)).body as Build
    return build.status === 'succeeded' || build.status === 'failed'
  }, BUILD_TIMEOUT, 'the build to end')
  t.equal(build?.status, 'succeeded', build?.error ?? '')
  t.match(build?.imageRef, new RegExp(`^${registry.host.replace(/\./g, '\\.')}/apps/hello@sha256:[0-9a-f]{64}$`), 'the digest the builder pushed')
  const log = await control.call('GET', `/applications/${app.id}/builds/${started.id}/logs`)
  t.match(log.text, build!.imageRef!, "the pod's log, kept: the builder names what it pushed")

  await until(async () => ((await control.call('GET', `/applications/${app.id}`)).body as { deployment: { ready: boolean } | null }).deployment?.ready === true,
    60_000, 'the SpinApp ready')
  const reply = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, { json: { method: 'GET', path: '/through/the/proxy' } })
  t.equal(reply.status, 200)
  t.match(reply.body, { status: 200, body: `hello from ${fn.name}\n`, headers: { 'x-request-path': ['/through/the/proxy'] } })

  // Variables as a deploy will set them, without a rebuild: the image relocked in the registry
  // to declare the name, the SpinApp's variables (a value from a Secret), the shim's environment.
  const relocked = await relockReference(build!.imageRef!, ['greeting'], { dockerConfigDir: dockerConfig })
  t.match(relocked, new RegExp(`^${registry.host.replace(/\./g, '\\.')}/apps/hello@sha256:[0-9a-f]{64}$`))
  fake.put(SECRETS, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'hello-variables' }, data: { greeting: Buffer.from('hej').toString('base64') } })
  const spinApp = fake.list(SPINAPPS)[0]!
  fake.put(SPINAPPS, { ...spinApp, spec: { ...spinApp.spec as object, image: relocked, variables: [{ name: 'greeting', valueFrom: { secretKeyRef: { name: 'hello-variables', key: 'greeting' } } }] } })
  await until(async () => {
    const answer = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, { json: { method: 'GET', path: '/' } })
    return (answer.body as { body?: string }).body === `hej from ${fn.name}\n`
  }, 60_000, 'the function to read the variable from the shim')
  t.pass('the component reads the SpinApp variable through fermyon:spin/variables')
})
