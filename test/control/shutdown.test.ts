// A replica stopping in a rolling update: on SIGTERM it first turns unready (GET /readyz 503)
// while it still answers every request, then ends a followed build log cleanly (the last
// chunk sent, no cut connection) and exits 0. The compiled process, on PGlite, against the real
// API server (test/helpers/kube-apiserver.ts) with the build log through pods/log from the
// kubelet stand-in (test/fixtures/kube-real.ts).
import t from 'tap'
import { realCluster, runJob, startKubelet } from '../fixtures/kube-real.js'
import { BUILDERS, REPOSITORY, tempDir } from '../helpers/cluster.js'
import { kubeNamespace } from '../helpers/kube-apiserver.js'
import { controlProcess, scratchDir } from '../helpers/control-process.js'
import { call, until } from '../helpers/control.js'
import type { App } from '../helpers/control.js'

// A control-plane process and the file's API server, each a start of seconds (more under load).
t.setTimeout(240_000)

t.test(
  'SIGTERM during a followed build log: unready first, still serving, then the stream ends cleanly and the process exits 0',
  async (t) => {
    const kube = realCluster(await kubeNamespace(t, tempDir(t)))
    const kubelet = await startKubelet(t, kube)
    const control = await controlProcess.start(t, [
      '--addr',
      '127.0.0.1:0',
      '--dev-insecure-skip-auth',
      '--data-dir',
      scratchDir(t),
      '--kubeconfig',
      kube.kubeconfig,
      '--namespace',
      kube.namespace,
      '--builder-images',
      BUILDERS,
      '--image-repository',
      REPOSITORY,
      '--shutdown-delay',
      '5s',
      '--log-level',
      'info',
    ])
    const base = `http://127.0.0.1:${control.port}`
    const readiness = async (): Promise<number> =>
      await fetch(`${base}/readyz`).then(async (r) => {
        await r.arrayBuffer()
        return r.status
      })
    t.equal(await readiness(), 200, 'ready while running')

    const app = (
      await call(base, 'POST', '/applications', { json: { name: 'hello', language: 'go', runtime: 'wasmkube' } })
    ).body as App
    const build = (await call(base, 'POST', `/applications/${app.id}/builds`)).body as { id: string }
    const pod = (await runJob(kube, `build-${build.id}`)).metadata.name
    kubelet.write(pod, 'compiling\n')
    const response = await fetch(`${base}/api/v1/applications/${app.id}/builds/${build.id}/logs?follow=true`)
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    let text = Buffer.from((await reader.read()).value ?? []).toString()
    t.equal(text, 'compiling\n', 'following')

    let streamEnded = false
    const rest = (async () => {
      for (;;) {
        const chunk = await reader.read() // rejects ("terminated") if the connection is cut mid-answer
        if (chunk.done) break
        text += Buffer.from(chunk.value).toString()
      }
      streamEnded = true
    })()

    await until(() => kubelet.followers(pod) === 1, 20_000, 'the API server following the kubelet')
    control.child.kill('SIGTERM')
    kubelet.write(pod, 'linking\n')
    await until(async () => (await readiness()) === 503, 5000, '/readyz answers 503')
    t.notOk(streamEnded, 'unready before the followed log ends')
    const during = await call(base, 'GET', '/applications')
    t.equal(during.status, 200, 'an unready replica still answers the requests it is sent')

    await rest
    t.equal(text, 'compiling\nlinking\n', 'the stream ended cleanly, with what came after SIGTERM too')
    t.match(await control.exited, { code: 0, signal: null }, 'and the process exits 0')
    t.ok(
      control.logs.some((l) => l.msg === 'unready; serving until the delay ends'),
      'says so in its log',
    )
    await t.rejects(fetch(`${base}/readyz`), 'nothing listens any more')
  },
)
