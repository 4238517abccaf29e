// Builds on the cluster: the Job and the source Secret a build creates, the watch that moves
// builds to running, succeeded or failed, the build log (waiting, following, kept in the
// database after the Job is gone), a restart that resumes builds, a watch that cannot
// reconnect, and what the caller sees when the cluster refuses. On the real API server
// (test/helpers/kube-apiserver.ts, the test playing the Job controller, the kubelet and its log
// endpoint: test/fixtures/kube-real.ts; the network cut by a TCP proxy; refusals by editing the
// Role; a watch ended or refused while lists work by an HTTPS proxy in front of it,
// test/helpers/kube-watch-proxy.ts).
import type { ClientRequest, IncomingMessage } from 'node:http'
import { get as httpGet } from 'node:http'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { createGunzip } from 'node:zlib'
import { Readable } from 'node:stream'
import t from 'tap'
import tar from 'tar-stream'
import { createApp, eachEngine, firstFunction, startTestControl, until } from '../helpers/control.js'
import type { TestControl } from '../helpers/control.js'
import { REPOSITORY, startRealClusterControl, tempDir } from '../helpers/cluster.js'
import * as real from '../fixtures/kube-real.js'
import { BUILD_POD_LABELS } from '@session-relay/control/cluster/build-jobs'
import { BUILDER_UID } from '@session-relay/control/cluster/build-pod'
import type { RealObject } from '../fixtures/kube-real.js'

// Each file starts its own API server, and every test a control plane on it.
t.setTimeout(300_000)

type Build = {
  id: string
  status: string
  imageRef: string | null
  error: string | null
  finishedAt: string | null
  createdAt: string
}

async function buildOf(control: TestControl, appId: string, buildId: string): Promise<Build> {
  return (await control.call('GET', `/applications/${appId}/builds/${buildId}`)).body as Build
}

async function untilStatus(control: TestControl, appId: string, buildId: string, status: string): Promise<Build> {
  await until(async () => (await buildOf(control, appId, buildId)).status === status, 20_000, `build ${status}`)
  return buildOf(control, appId, buildId)
}

async function unpack(gz: Buffer): Promise<Record<string, string>> {
  const files: Record<string, string> = {}
  const extract = tar.extract()
  extract.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = []
    stream.on('data', (c: unknown) => chunks.push(c as Buffer))
    stream.on('end', () => {
      files[header.name] = Buffer.concat(chunks).toString('utf8')
      next()
    })
  })
  const done = new Promise<void>((resolve) => extract.on('finish', () => resolve()))
  Readable.from([gz]).pipe(createGunzip()).pipe(extract)
  await done
  return files
}

eachEngine(
  t,
  "with --builder-registry-secret the build mounts that Secret's config.json as the builder's DOCKER_CONFIG",
  async (t, engine) => {
    const { control, kube } = await startRealClusterControl(t, engine, {
      flags: ['--builder-registry-secret', 'regcred'],
    })
    const app = await createApp(control, 'hello')
    const build = (await control.call('POST', `/applications/${app.id}/builds`)).body as Build
    const job = (await kube.get(real.JOB, `build-${build.id}`)) as RealObject & {
      spec: { template: { spec: Record<string, unknown> } }
    }
    const podSpec = job.spec.template.spec
    // defaultMode: the API server's default (0644).
    t.same((podSpec.volumes as unknown[])[1], {
      name: 'registry',
      secret: { secretName: 'regcred', items: [{ key: '.dockerconfigjson', path: 'config.json' }], defaultMode: 420 },
    })
    const container = (
      podSpec.containers as Array<{ env: Array<{ name: string; value: string }>; volumeMounts: unknown[] }>
    )[0]
    t.same(
      container?.env.find((e) => e.name === 'DOCKER_CONFIG'),
      { name: 'DOCKER_CONFIG', value: '/var/run/secrets/registry' },
    )
    t.same(container?.volumeMounts[1], { name: 'registry', mountPath: '/var/run/secrets/registry', readOnly: true })
  },
)

eachEngine(
  t,
  'a build: Job and Secret, running, succeeded with the pushed image, log kept, SpinApp applied',
  async (t, engine) => {
    const { control, kube, finished } = await startRealClusterControl(t, engine, {
      flags: [
        ...['--build-timeout', '10m', '--build-ttl', '2h', '--build-cpu', '500m', '--build-memory', '1Gi'],
        ...['--build-ephemeral-storage', '3Gi'],
      ],
    })
    const kubelet = real.kubeletOf(kube)
    const app = await createApp(control, 'hello')
    const fn = firstFunction(app)
    await control.call('PUT', `/applications/${app.id}/functions/${fn.id}/source`, {
      json: { files: { 'main.go': 'package main\n', 'go.mod': 'module hello\n' } },
    })
    await control.call('POST', `/applications/${app.id}/functions`, { json: { name: 'api', route: '/api/...' } })

    const started = await control.call('POST', `/applications/${app.id}/builds`)
    t.equal(started.status, 202)
    const build = started.body as Build
    t.match(build, { status: 'pending', imageRef: null, finishedAt: null, error: null })

    const jobName = `build-${build.id}`
    const job = (await kube.get(real.JOB, jobName)) as RealObject & { spec: Record<string, unknown> }
    t.ok(job, 'a Job named after the build')
    t.match(job.metadata.labels, {
      'app.kubernetes.io/managed-by': 'platform-control',
      'platform.wasmkube.dev/application': app.id,
      'platform.wasmkube.dev/build': build.id,
    })
    t.match(job.spec, { backoffLimit: 0, activeDeadlineSeconds: 600, ttlSecondsAfterFinished: 7200 })
    const template = job.spec.template as {
      metadata: { labels: Record<string, string> }
      spec: Record<string, unknown>
    }
    t.match(
      template.metadata.labels,
      BUILD_POD_LABELS,
      "the pod carries what deploy/'s build-pods NetworkPolicy selects",
    )
    const podSpec = template.spec
    t.match(podSpec, {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      volumes: [{ name: 'source', secret: { secretName: jobName } }],
    })
    t.same(
      podSpec.securityContext,
      {
        runAsNonRoot: true,
        runAsUser: BUILDER_UID,
        runAsGroup: BUILDER_UID,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      "the pod runs as the builder images' non-root uid, under the runtime's default seccomp filter",
    )
    const container = (podSpec.containers as Array<Record<string, unknown>>)[0]
    const resources = { cpu: '500m', memory: '1Gi', 'ephemeral-storage': '3Gi' }
    t.match(container, {
      name: 'build',
      image: 'builders.test/go:1',
      volumeMounts: [{ name: 'source', mountPath: '/workspace/source', readOnly: true }],
    })
    t.same(
      container?.resources,
      { requests: resources, limits: resources },
      'cpu, memory and disk, requested and capped',
    )
    t.same(
      container?.securityContext,
      {
        runAsNonRoot: true,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        privileged: false,
        capabilities: { drop: ['ALL'] },
      },
      'a read-only root, no capability, no privilege escalation',
    )
    const tmp = (container?.volumeMounts as Array<{ name: string; mountPath: string }>).find(
      (m) => m.mountPath === '/tmp',
    )
    t.same(
      (podSpec.volumes as Array<{ name: string }>).find((v) => v.name === tmp?.name),
      { name: 'tmp', emptyDir: { sizeLimit: '3Gi' } },
      "the builder's only writable place: an emptyDir /tmp as large as its disk limit",
    )
    t.same(
      (container?.env as Array<{ name: string; value: string }>).find((e) => e.name === 'IMAGE_REF')?.value,
      `${REPOSITORY}/hello:${build.id}`,
    )
    t.notOk(
      (container?.env as Array<{ name: string }>).some((e) => e.name === 'DOCKER_CONFIG'),
      'no registry Secret configured: no DOCKER_CONFIG',
    )

    const secret = (await kube.get(real.SECRET, jobName)) as RealObject & { data: Record<string, string> }
    t.ok(secret, 'a Secret with the sources')
    t.same(
      secret.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.uid]),
      [['Job', jobName, job.metadata.uid]],
      'owned by the Job, so it goes with it',
    )
    const files = await unpack(Buffer.from(secret.data['source.tar.gz'] as string, 'base64'))
    t.same(
      Object.keys(files).sort(),
      [
        'functions/api/go.mod',
        'functions/api/main.go',
        'functions/hello/go.mod',
        'functions/hello/main.go',
        'spin.toml',
      ],
      'a function added without uploading holds its template',
    )
    t.equal(files['functions/hello/main.go'], 'package main\n')
    t.match(files['spin.toml'], /spin_manifest_version = 2/)
    t.match(files['spin.toml'], /\[\[trigger\.http\]\]\nroute = "\/api\/\.\.\."\ncomponent = "api"/)
    t.match(files['spin.toml'], /\[component\.hello\]\nsource = "functions\/hello\/component\.wasm"/)
    t.match(files['spin.toml'], /command = "GOOS=wasip1 GOARCH=wasm go build/)

    const pod = await real.runJob(kube, jobName)
    await untilStatus(control, app.id, build.id, 'running')
    kubelet.write(pod.metadata.name, 'step 1: compiling\n')
    const sofar = await control.call('GET', `/applications/${app.id}/builds/${build.id}/logs`)
    t.equal(sofar.status, 200)
    t.match(sofar.headers.get('content-type'), /^text\/plain/)
    t.equal(sofar.text, 'step 1: compiling\n', 'without follow: what there is, at once')

    const following = await fetch(`${control.url}/api/v1/applications/${app.id}/builds/${build.id}/logs?follow=true`)
    t.equal(following.status, 200)
    const reader = following.body!.getReader()
    const first = await reader.read()
    t.equal(Buffer.from(first.value).toString(), 'step 1: compiling\n')
    await until(() => kubelet.followers(pod.metadata.name) === 1, 20_000, 'the API server following the kubelet')
    kubelet.write(pod.metadata.name, 'step 2: pushing\n')
    const second = await reader.read()
    t.equal(Buffer.from(second.value).toString(), 'step 2: pushing\n', 'new lines arrive while following')
    await real.succeedJob(kube, jobName, `${REPOSITORY}/hello@sha256:${'a'.repeat(64)}`)
    t.ok((await reader.read()).done, 'the stream ends when the pod exits')

    const done = await untilStatus(control, app.id, build.id, 'succeeded')
    t.equal(done.imageRef, `${REPOSITORY}/hello@sha256:${'a'.repeat(64)}`, 'the image the builder reported')
    t.match(done.finishedAt, /Z$/)
    t.equal(done.error, null)
    await until(() => finished.length === 1, 20_000, 'onBuildFinished')
    t.match(finished, [{ id: build.id, status: 'succeeded' }], 'onBuildFinished told once')
    const exposition = await (await fetch(`${control.url}/metrics`)).text()
    t.match(exposition, /^platform_builds_finished_total\{result="succeeded"\} 1$/m, '/metrics counts the build')
    t.match(exposition, /^platform_build_duration_seconds_count\{result="succeeded"\} 1$/m, 'and its duration')

    const spinApp = await kube.get(real.SPINAPP, 'hello')
    t.match(
      spinApp,
      { spec: { image: done.imageRef, executor: 'containerd-shim-spin', replicas: 1 } },
      'the SpinApp applied after the build',
    )
    t.same(
      spinApp?.metadata.managedFields?.filter((f) => f.subresource !== 'status').map((f) => [f.manager, f.operation]),
      [['platform-control', 'Apply']],
      "server-side, by the control plane's field manager (the status is spin-operator's)",
    )
    const applies = kube.server
      .audit()
      .filter((a) => a.user.username === kube.user && a.objectRef?.resource === 'spinapps' && a.verb === 'patch')
    t.equal(applies.length, 1, 'applied once')
    t.match(applies[0]?.requestURI, /[?&]fieldManager=platform-control(&|$)/)
    t.match(applies[0]?.requestURI, /[?&]force=true(&|$)/)

    // The Job's TTL runs out: the Job, its pod and its Secret are gone (deleted as the TTL
    // controller does, then Kubernetes' garbage collector); the log is not.
    await kube.must('DELETE', kube.path(real.JOB, jobName), { propagationPolicy: 'Background' })
    t.same(
      await real.collected(kube, [
        [real.POD, pod.metadata.name],
        [real.SECRET, jobName],
      ]),
      [`pods/${pod.metadata.name}`, `secrets/${jobName}`],
      'the pod and the Secret go with the Job',
    )
    const kept = await control.call('GET', `/applications/${app.id}/builds/${build.id}/logs?follow=true`)
    t.equal(kept.status, 200)
    t.equal(kept.text, 'step 1: compiling\nstep 2: pushing\n', 'the log from the database')
    t.equal(finished.length, 1, 'a deleted finished Job changes nothing')
    t.equal((await buildOf(control, app.id, build.id)).status, 'succeeded')
    t.notOk(control.logText().includes(kube.token), 'the cluster token is never logged')
  },
)

eachEngine(t, 'failed builds: the termination message, else the Job condition', async (t, engine) => {
  const { control, kube, finished } = await startRealClusterControl(t, engine)
  const app = await createApp(control, 'broken')
  const first = (await control.call('POST', `/applications/${app.id}/builds`)).body as Build
  const pod = await real.runJob(kube, `build-${first.id}`)
  real.kubeletOf(kube).write(pod.metadata.name, 'main.go:3: undefined: x\n')
  await real.failJob(kube, `build-${first.id}`, { message: 'main.go:3: undefined: x' })
  const failed = await untilStatus(control, app.id, first.id, 'failed')
  t.equal(failed.error, 'main.go:3: undefined: x')
  t.equal(failed.imageRef, null)
  t.match(failed.finishedAt, /Z$/)
  t.equal(
    (await control.call('GET', `/applications/${app.id}/builds/${first.id}/logs`)).text,
    'main.go:3: undefined: x\n',
  )

  const second = (await control.call('POST', `/applications/${app.id}/builds`)).body as Build
  await real.failJob(kube, `build-${second.id}`, { reason: 'DeadlineExceeded' })
  const timedOut = await untilStatus(control, app.id, second.id, 'failed')
  t.equal(timedOut.error, 'DeadlineExceeded: Job was active longer than specified deadline', 'past the build timeout')
  await until(() => finished.length === 2, 20_000, 'both finished')
  t.same(
    finished.map((b) => b.status),
    ['failed', 'failed'],
  )
  t.same(await kube.list(real.SPINAPP), [], 'nothing deployed')
})

eachEngine(
  t,
  'build logs wait for the container to start; a caller who leaves ends the upstream stream',
  async (t, engine) => {
    const { control, kube } = await startRealClusterControl(t, engine)
    const kubelet = real.kubeletOf(kube)
    const app = await createApp(control, 'slow')
    const build = (await control.call('POST', `/applications/${app.id}/builds`)).body as Build
    const jobName = `build-${build.id}`
    const pod = await real.podOfJob(kube, jobName)
    // node:http, so leaving is one socket destroyed, as a client that goes away does.
    let caller: ClientRequest | undefined
    const podLists = (): number =>
      kube.server
        .audit()
        .filter((a) => a.user.username === kube.user && a.objectRef?.resource === 'pods' && a.verb === 'list').length
    const looked = podLists()
    const pending = new Promise<IncomingMessage>((resolve) => {
      caller = httpGet(`${control.url}/api/v1/applications/${app.id}/builds/${build.id}/logs?follow=true`, resolve)
    })
    // The control plane has looked for the build's pod and found it not yet running.
    await until(() => podLists() > looked, 20_000, 'the log request looking for the pod')
    kubelet.write(pod.metadata.name, 'started\n')
    await real.runJob(kube, jobName)
    const response = await pending
    t.equal(response.statusCode, 200, 'answered once the container runs')
    t.equal(String(await new Promise((resolve) => response.once('data', resolve))), 'started\n')
    await until(() => kubelet.followers(pod.metadata.name) === 1, 20_000, 'following upstream')
    caller?.destroy()
    await until(() => kubelet.followers(pod.metadata.name) === 0, 20_000, 'upstream closed after the caller left')
    t.pass('the upstream log stream closed')
  },
)

eachEngine(t, 'a restart resumes unfinished builds from their Jobs; a lost Job fails its build', async (t, engine) => {
  const before = await startRealClusterControl(t, engine)
  const { kube } = before
  const app = await createApp(before.control, 'resume')
  const done = (await before.control.call('POST', `/applications/${app.id}/builds`)).body as Build
  const lost = (await before.control.call('POST', `/applications/${app.id}/builds`)).body as Build
  await before.control.close()

  await real.succeedJob(kube, `build-${done.id}`, '')
  // As kubectl deletes (a Job's own default is to orphan its pods, which the garbage collector
  // would do before the Job goes; there is none here).
  await kube.must('DELETE', kube.path(real.JOB, `build-${lost.id}`), { propagationPolicy: 'Background' })
  const after = await startRealClusterControl(t, engine, { kube, store: before.control.store })
  const resumed = await untilStatus(after.control, app.id, done.id, 'succeeded')
  t.equal(
    resumed.imageRef,
    `${REPOSITORY}/resume:${done.id}`,
    'without a reported image: the reference the builder was given',
  )
  const gone = await untilStatus(after.control, app.id, lost.id, 'failed')
  t.equal(gone.error, 'the build Job is gone from the cluster')
})

eachEngine(t, 'after the watch breaks, a new list catches up with what changed meanwhile', async (t, engine) => {
  const { control, kube, proxy } = await startRealClusterControl(t, engine, { proxy: true })
  const app = await createApp(control, 'relist')
  const build = (await control.call('POST', `/applications/${app.id}/builds`)).body as Build
  const requests = (verb: string): number =>
    kube.server
      .audit()
      .filter((a) => a.user.username === kube.user && a.objectRef?.resource === 'jobs' && a.verb === verb).length
  await until(() => requests('watch') >= 1, 20_000, 'watching')
  const [listed, watched] = [requests('list'), requests('watch')]
  // The network between the control plane and the API server goes: the watch breaks and no
  // list gets through, while the Job finishes.
  proxy?.pause()
  await real.succeedJob(kube, `build-${build.id}`, '')
  await until(
    () =>
      control.logs.some(
        (l) => l.msg === 'build watch failed; listing again' || l.msg === 'cannot list build Jobs; retrying',
      ),
    20_000,
    'the broken watch logged',
  )
  t.equal((await buildOf(control, app.id, build.id)).status, 'pending', 'nothing seen while cut off')
  proxy?.resume()
  await untilStatus(control, app.id, build.id, 'succeeded')
  t.ok(requests('list') > listed, 'seen through a new list')
  await until(() => requests('watch') > watched, 20_000, 'watching again')
  t.pass('watching again from the new list')
})

eachEngine(t, 'a watch refused while lists work: builds still end, through lists', async (t, engine) => {
  const { control, kube, watches } = await startRealClusterControl(t, engine, { watchProxy: true })
  const proxy = watches!
  const app = await createApp(control, 'relist')
  const build = (await control.call('POST', `/applications/${app.id}/builds`)).body as Build
  // Two watches: the build Jobs' and the SpinApps' (cluster/spinapp-watch.ts).
  await until(() => proxy.watches() === 2, 20_000, 'watching')
  const lists = (): number =>
    kube.server
      .audit()
      .filter((a) => a.user.username === kube.user && a.objectRef?.resource === 'jobs' && a.verb === 'list').length
  const listed = lists()
  proxy.refuseWatches = true
  proxy.endWatches()
  await real.succeedJob(kube, `build-${build.id}`, '')
  await untilStatus(control, app.id, build.id, 'succeeded')
  t.ok(lists() > listed, 'seen through a list, no watch being possible')
  await until(
    () => control.logs.some((l) => l.msg === 'build watch failed; listing again'),
    20_000,
    'the failed watch logged',
  )
  proxy.refuseWatches = false
  await until(() => proxy.watches() === 2, 40_000, 'watching again')
  t.pass('watching again once watches go through')
})

eachEngine(t, 'the cluster refusing: 503 with a reason that is safe to show; nothing half-made', async (t, engine) => {
  const { control, kube, proxy } = await startRealClusterControl(t, engine, { proxy: true })
  const app = await createApp(control, 'refused')
  await real.setRoleVerb(kube, 'batch', 'jobs', 'create', false)
  const forbidden = await control.call('POST', `/applications/${app.id}/builds`)
  t.equal(forbidden.status, 503)
  t.same(forbidden.body, { error: 'cluster permission missing: the control plane may not create batch jobs' })
  t.same((await control.call('GET', `/applications/${app.id}/builds`)).body, [], 'no build left behind')
  await real.setRoleVerb(kube, 'batch', 'jobs', 'create', true)
  await real.setRoleVerb(kube, '', 'secrets', 'create', false)
  const noSecret = await control.call('POST', `/applications/${app.id}/builds`)
  t.same(noSecret.body, { error: 'cluster permission missing: the control plane may not create secrets' })
  t.same(await kube.list(real.JOB), [], 'the Job made before the Secret failed is removed')
  await real.setRoleVerb(kube, '', 'secrets', 'create', true)

  // Random base64 gzips to about 3/4: two functions of 800 KiB each cannot fit a 1 MiB Secret.
  const bulky = await createApp(control, 'bulky')
  const second = (await control.call('POST', `/applications/${bulky.id}/functions`, { json: { name: 'second' } }))
    .body as { id: string }
  for (const fnId of [firstFunction(bulky).id, second.id]) {
    const noise = randomBytes(600 * 1024).toString('base64')
    t.equal(
      (
        await control.call('PUT', `/applications/${bulky.id}/functions/${fnId}/source`, {
          json: { files: { 'noise.txt': noise } },
        })
      ).status,
      200,
    )
  }
  const tooBig = await control.call('POST', `/applications/${bulky.id}/builds`)
  t.equal(tooBig.status, 413)
  t.match(tooBig.body, {
    error: /^source too large to build: the gzipped sources take \d+ bytes, at most \d+ fit in a Secret$/,
  })
  t.same(await kube.list(real.JOB), [], 'no Job for it')
  t.same((await control.call('GET', `/applications/${bulky.id}/builds`)).body, [], 'and no build')

  const bare = await startRealClusterControl(t, engine, {
    kube,
    flags: ['--builder-images', 'go=builders.test/go:1', '--image-repository', ''],
  })
  const js = await createApp(bare.control, 'script', { language: 'js' })
  t.same((await bare.control.call('POST', `/applications/${js.id}/builds`)).body, {
    error: 'no builder image for js: set PLATFORM_BUILDER_IMAGES',
  })
  const go = await createApp(bare.control, 'gopher')
  t.same((await bare.control.call('POST', `/applications/${go.id}/builds`)).body, {
    error: 'no image repository for builds: set PLATFORM_IMAGE_REPOSITORY',
  })

  proxy?.stop()
  const down = await control.call('POST', `/applications/${app.id}/builds`)
  t.equal(down.status, 503)
  t.same(down.body, { error: 'cluster unreachable' })
  t.equal((await control.call('GET', `/applications/${app.id}`)).status, 200, 'the rest of the API keeps working')
  t.notOk(control.logText().includes(kube.token), 'no token in the logs')
})

t.test(
  'no cluster at all: the API starts and says so; builds and deployments run on this machine unless --runtime cluster',
  async (t) => {
    const control = await startTestControl(t, 'pglite')
    t.equal(control.server.cluster, null)
    t.not(control.server.local, null)
    t.ok(
      control.logs.some((l) => /no cluster configured.*builds and deployments run on this machine/.test(String(l.msg))),
      'said at start',
    )
    const forced = await startTestControl(t, 'pglite', ['--dev-insecure-skip-auth', '--runtime', 'cluster'])
    t.equal(forced.server.local, null)
    t.ok(
      forced.logs.some((l) =>
        /no cluster configured.*--runtime cluster: builds, deploy, invoke and logs answer 503/.test(String(l.msg)),
      ),
      'a warning at start',
    )
  },
)

t.test('a kubeconfig that cannot be read stops the start with a ConfigError (exit code 2)', async (t) => {
  const dir = tempDir(t)
  await t.rejects(startTestControl(t, 'pglite', ['--dev-insecure-skip-auth', '--kubeconfig', `${dir}/missing.yaml`]), {
    name: 'ConfigError',
    message: /^cannot read the kubeconfig: /,
  })
  writeFileSync(`${dir}/empty.yaml`, 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n')
  await t.rejects(startTestControl(t, 'pglite', ['--dev-insecure-skip-auth', '--kubeconfig', `${dir}/empty.yaml`]), {
    name: 'ConfigError',
    message: 'the kubeconfig has no current cluster',
  })
})

t.test('a plain-HTTP registry: the builder is told INSECURE_REGISTRY', async (t) => {
  const { control, kube } = await startRealClusterControl(t, 'pglite', { flags: ['--registry-insecure'] })
  const app = await createApp(control, 'hello')
  const build = (await control.call('POST', `/applications/${app.id}/builds`)).body as Build
  type PodSpec = { containers: Array<{ env: Array<{ name: string; value?: string }> }> }
  const pod = ((await kube.get(real.JOB, `build-${build.id}`))?.spec as { template: { spec: PodSpec } }).template.spec
  t.same(pod.containers[0]!.env.at(-1), { name: 'INSECURE_REGISTRY', value: 'true' })
})
