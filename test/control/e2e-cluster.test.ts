// The whole path in a cluster, all of it real but the node: the real API server
// (test/helpers/kube-apiserver.ts) with Kubernetes' own controllers and spin-operator, the
// control plane holding exactly the Role from deploy/, the build Job's pod run by the kubelet
// stand-in as the builder process (test/fixtures/kube-real-runners.ts) pushing to a real
// distribution registry, spin-operator's pod for the SpinApp run by the node's shim stand-in
// (test/fixtures/kube-real-shim.ts) from what the pod says (pulled with the pod's pull Secret,
// variables from the Secret keys its environment names), and invoke through the control plane
// and the API server's own service proxy, which reaches the pod's IP over the node network
// stand-in (test/helpers/kube-node-network.ts). First with htpasswd credentials of the
// operator's Secret and a variable through PATCH without a rebuild; then with the control plane
// as the registry's token server: the Job pushes with its own credential, its log through
// pods/log, the SpinApp applied with its tenant's pull Secret and relocked for a secret
// variable. Two real js builds.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { templateFiles } from '@session-relay/spin/templates'
import { tempDir } from '../helpers/cluster.js'
import { templateInCluster } from '../helpers/cluster-template.js'
import { createApp, firstFunction, until } from '../helpers/control.js'
import { startRegistry } from '../helpers/registry.js'
import { runBuildJobsReal } from '../fixtures/kube-real-runners.js'
import { runSpinAppPods } from '../fixtures/kube-real-shim.js'
import { JOB, SECRET, SPINAPP } from '../fixtures/kube-real.js'
import { startRealClusterControl } from '../helpers/cluster.js'
import { freePort } from '../helpers/ports.js'
import { selfSignedCertificate } from '../helpers/tls.js'
import { pullSpinApp } from '@session-relay/spin/artifact'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import { tenantPullSecretName } from '@session-relay/control/cluster/pull-secret'
import { REGISTRY_TOKEN_ISSUER } from '@session-relay/control/registry/signing-key'

const BUILD_TIMEOUT = 240_000
// Two tests of at most BUILD_TIMEOUT + 60 s each, and the file's own start.
t.setTimeout(2 * BUILD_TIMEOUT + 180_000)
const SECRET_GREETING = 'hej-secret-value-77d2'

type Build = { id: string; status: string; imageRef: string | null; error: string | null }

t.test(
  'js in the cluster: Job → builder → registry → SpinApp → shim → invoke answers with the template',
  { timeout: BUILD_TIMEOUT + 60_000 },
  async (t) => {
    const { control, kube, registry, app, fn, build, log } = await templateInCluster(t, 'js', {
      relock: 'registry',
      name: 'hello',
      buildTimeoutMs: BUILD_TIMEOUT,
      loadTimeoutMs: 120_000,
    })
    t.match(log, build.imageRef, "the pod's log, kept: the builder names what it pushed")

    // A secret variable through PATCH, without a rebuild: the control plane writes the value to
    // the application's Secret, re-locks the image in the registry to declare the name (with the
    // push credentials of --builder-registry-secret) and applies the SpinApp, whose shim gets the
    // value from the Secret.
    const patched = await control.call('PATCH', `/applications/${app.id}`, {
      json: { variables: { greeting: { secret: SECRET_GREETING } } },
    })
    t.equal(patched.status, 200, patched.text)
    t.match(patched.body, {
      variables: { greeting: { secret: true } },
      deployment: { message: /^re-applied with the new settings/ },
    })
    const spec = (await kube.get(SPINAPP, 'hello'))?.spec as { image: string; variables: unknown[] }
    t.match(
      spec.image,
      new RegExp(`^${registry.host.replace(/\./g, '\\.')}/apps/hello@sha256:[0-9a-f]{64}$`),
      'a digest-pinned image in the registry',
    )
    t.not(spec.image, build.imageRef, "relocked: not the build's artifact")
    t.same(spec.variables, [
      { name: 'greeting', valueFrom: { secretKeyRef: { name: 'hello-variables', key: 'greeting' } } },
    ])
    await until(
      async () => {
        const answer = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, {
          json: { method: 'GET', path: '/' },
        })
        return (answer.body as { body?: string }).body === `${SECRET_GREETING} from ${fn.name}\n`
      },
      60_000,
      'the function to read the variable from the shim',
    )
    t.notOk(
      control.logText().includes(SECRET_GREETING) || patched.text.includes(SECRET_GREETING),
      'the secret is in no log line and not in the answer',
    )
    t.notOk(control.logText().includes(registry.credentials!.password), 'nor is the registry password')
    t.pass('the component reads the SpinApp variable through fermyon:spin/variables')
  },
)

t.test(
  "js on the real API server, the control plane as the registry's token server: Job → runner → builder → registry → SpinApp, relocked for a secret variable",
  { timeout: BUILD_TIMEOUT + 60_000 },
  async (t) => {
    // The registry trusts the control plane's tokens, and the control plane names the registry:
    // the registry's port is picked first.
    const { certPath, keyPath } = await selfSignedCertificate(t)
    const keyFile = join(tempDir(t), 'registry-token.pem')
    writeFileSync(keyFile, `${readFileSync(keyPath, 'utf8')}${readFileSync(certPath, 'utf8')}`, { mode: 0o600 })
    const registryPort = await freePort()
    const { control, kube, finished } = await startRealClusterControl(t, 'pglite', {
      relock: 'registry',
      flags: [
        '--image-repository',
        `127.0.0.1:${registryPort}/apps`,
        '--registry-token-key',
        keyFile,
        '--registry-token-service',
        'test-registry',
      ],
    })
    const registry = await startRegistry(t, {
      port: registryPort,
      token: {
        realm: `${control.url}/registry/token`,
        service: 'test-registry',
        issuer: REGISTRY_TOKEN_ISSUER,
        certPath,
      },
    })
    // No shared credential: each build Job's own, from its Secret.
    await runBuildJobsReal(t, kube, {})
    await runSpinAppPods(t, kube)

    const app = await createApp(control, 'hello', { language: 'js' })
    const fn = firstFunction(app)
    t.equal(
      (
        await control.call('PUT', `/applications/${app.id}/functions/${fn.id}/source`, {
          json: { files: templateFiles('js', fn.name) },
        })
      ).status,
      200,
    )
    const started = (await control.call('POST', `/applications/${app.id}/builds`)).body as Build
    await until(() => finished.some((b) => b.id === started.id), BUILD_TIMEOUT, 'the build to end and its deploy')
    const build = (await control.call('GET', `/applications/${app.id}/builds/${started.id}`)).body as Build
    t.equal(build.status, 'succeeded', build.error ?? '')
    const pushed = new RegExp(`^${registry.host.replace(/\./g, '\\.')}/apps/hello@sha256:[0-9a-f]{64}$`)
    t.match(build.imageRef, pushed, "the digest the builder pushed, from the pod's termination message")
    const log = await control.call('GET', `/applications/${app.id}/builds/${started.id}/logs`)
    t.match(log.text, build.imageRef!, "the pod's log, kept: the builder names what it pushed")
    const pullSecret = tenantPullSecretName('default')
    t.match(
      (await kube.get(SPINAPP, 'hello'))?.spec,
      {
        image: build.imageRef,
        executor: 'containerd-shim-spin',
        replicas: 1,
        imagePullSecrets: [{ name: pullSecret }],
      },
      "the SpinApp on the pushed image, pulled with its tenant's Secret",
    )
    const job = await kube.get(JOB, `build-${started.id}`)
    t.notMatch(JSON.stringify(job?.spec), /registry-credentials/, 'no shared credential is mounted into the Job')
    t.match(
      (await kube.get(SECRET, `build-${started.id}`))?.data,
      { 'registry-config.json': String },
      "the build's own credential beside its source",
    )
    // What a node does with the tenant's Secret: pull the image through the token server.
    const pullConfig = tempDir(t)
    writeFileSync(
      join(pullConfig, 'config.json'),
      Buffer.from((await kube.get(SECRET, pullSecret))?.data?.['.dockerconfigjson'] ?? '', 'base64'),
    )
    const image = parseRef(build.imageRef!)
    t.equal(
      (await pullSpinApp(await openStore(image, { dockerConfigDir: pullConfig }), image.digest!)).digest,
      image.digest,
      "the tenant's pull Secret pulls the image",
    )

    // A secret variable: the value in the application's Secret, the image relocked in the
    // registry with a credential the control plane signs itself, the SpinApp applied.
    const patched = await control.call('PATCH', `/applications/${app.id}`, {
      json: { variables: { greeting: { secret: SECRET_GREETING } } },
    })
    t.equal(patched.status, 200, patched.text)
    const spec = (await kube.get(SPINAPP, 'hello'))?.spec as { image: string; variables: unknown[] }
    t.match(spec.image, pushed, 'a digest-pinned image in the registry')
    t.not(spec.image, build.imageRef, "relocked: not the build's artifact")
    t.same(spec.variables, [
      { name: 'greeting', valueFrom: { secretKeyRef: { name: 'hello-variables', key: 'greeting' } } },
    ])
    t.equal(
      Buffer.from((await kube.get(SECRET, 'hello-variables'))?.data?.greeting ?? '', 'base64').toString(),
      SECRET_GREETING,
    )
    // The pod spin-operator's Deployment made for the relocked image, run from what it says (the
    // variable from the Secret key its environment names), answers through the service proxy.
    await until(
      async () => {
        const answer = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, {
          json: { method: 'GET', path: '/' },
        })
        return (answer.body as { body?: string }).body === `${SECRET_GREETING} from ${fn.name}\n`
      },
      // The worker compiles the component at the pod's first load: tens of seconds on a busy machine.
      180_000,
      "the pod's function to read the secret variable",
    )
    t.ok(
      kube.server.network.dialed().some((address) => address.startsWith('10.244.')),
      "the API server's proxy dialed a pod IP through the node network",
    )
    t.notOk(
      control.logText().includes(SECRET_GREETING) || patched.text.includes(SECRET_GREETING),
      'the secret is in no log line and not in the answer',
    )
    t.notMatch(
      control.logText() + registry.output(),
      /eyJ[A-Za-z0-9_-]{20,}\.eyJ/,
      'no credential or token in a log line',
    )
  },
)
