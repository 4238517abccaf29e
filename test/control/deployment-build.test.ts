// Which build a deployment runs (deployment.buildId), on the real API server with its
// controllers and spin-operator (test/helpers/kube-apiserver.ts), whose registry is a stand-in
// relock (another digest per image and names, or a refusal): a build deployed as built
// is named by its image; re-locked with the variables' names its digest matches no build and
// the build deployed last is named; a newer build whose deploy was refused is not, since the
// SpinApp still runs the one before.
import { createHash } from 'node:crypto'
import t from 'tap'
import { SPINAPP, succeedJob } from '../fixtures/kube-real.js'
import type { RealClusterControl } from '../helpers/cluster.js'
import { REPOSITORY, startRealClusterControl } from '../helpers/cluster.js'
import { createApp, eachEngine, until } from '../helpers/control.js'

type Deployment = { image: string; buildId: string | null; message: string }
type Build = { id: string; imageRef: string | null }

t.setTimeout(120_000)

/** A build of `name` that succeeds with an image of `digest`, once what follows its end is done. */
async function build(cluster: RealClusterControl, appId: string, name: string, digest: string): Promise<Build> {
  const started = (await cluster.control.call('POST', `/applications/${appId}/builds`)).body as { id: string }
  const imageRef = `${REPOSITORY}/${name}@sha256:${digest.repeat(64)}`
  await succeedJob(cluster.kube, `build-${started.id}`, imageRef)
  await until(() => cluster.finished.some((b) => b.id === started.id), 10_000, `build ${started.id} finished`)
  return { id: started.id, imageRef }
}

eachEngine(
  t,
  'deployment.buildId: the build as built, re-locked, and not a newer one that was not deployed',
  async (t, engine) => {
    let refuse = false
    // What the registry would answer: a digest of its own for each image and set of names.
    const relocks: string[] = []
    const cluster = await startRealClusterControl(t, engine, {
      relock: async (image, names) => {
        if (refuse) throw new Error('registry.test refused the push')
        const relocked = `${image.slice(0, image.indexOf('@'))}@sha256:${createHash('sha256')
          .update(`${image} ${names.join(',')}`)
          .digest('hex')}`
        relocks.push(relocked)
        return relocked
      },
    })
    const { control, kube } = cluster
    const app = await createApp(control, 'hello')
    const deployment = async (): Promise<Deployment> =>
      ((await control.call('GET', `/applications/${app.id}`)).body as { deployment: Deployment }).deployment
    const running = async (): Promise<string> => ((await kube.get(SPINAPP, 'hello'))?.spec as { image: string }).image

    const first = await build(cluster, app.id, 'hello', 'a')
    t.match(
      await deployment(),
      { image: first.imageRef, buildId: first.id },
      "without variables: the build's own image, and that build",
    )

    const patched = await control.call('PATCH', `/applications/${app.id}`, {
      json: { variables: { greeting: { value: 'hi' } } },
    })
    t.equal(patched.status, 200)
    t.equal(await running(), relocks[0], "the SpinApp runs the image re-locked with the variable's name")
    t.not(relocks[0], first.imageRef, 'under another digest')
    t.match(await deployment(), { image: relocks[0], buildId: first.id }, 're-locked: still named as the first build')

    const second = await build(cluster, app.id, 'hello', 'b')
    t.equal(await running(), relocks[1], 'the second build runs re-locked')
    t.match(await deployment(), { image: relocks[1], buildId: second.id }, 'and is named')

    refuse = true
    const third = await build(cluster, app.id, 'hello', 'c')
    t.equal(await running(), relocks[1], "the third build's deploy was refused: the second still runs")
    const now = await deployment()
    t.match(now, { image: relocks[1], buildId: second.id }, 'named as the second build, not the newest that succeeded')
    t.not(now.buildId, third.id)
    t.match(now.message, /the newest build is not deployed/, 'the message says the newest is not')

    refuse = false
    t.equal((await control.call('POST', `/applications/${app.id}/deploy`)).status, 202)
    t.match(await deployment(), { image: relocks[2], buildId: third.id }, 'deployed again: the third build, re-locked')
  },
)
