// What a go or rust build Job gives the builder image, on the real API server
// (test/helpers/kube-apiserver.ts; the Job's spec as stored is all this reads; `npm run test:images` runs each builder image's entrypoint with the
// same settings): the language's builder image; the contract's settings and nothing that
// overrides the image's own (RUST_ROOT=/ and PATH come from builders/Dockerfile.rust and .go;
// no DEPENDENCY_CACHE, so the builder keeps one in its work directory for the build); a
// read-only root with a writable emptyDir /tmp, where go's build cache and cargo's registry and
// target go; the resources and deadline a cold build fits in (docs/builders.md); and a source
// archive the builder reads back, with the template's files and, for go, the WAGI executor.
import { Readable } from 'node:stream'
import t from 'tap'
import { lockedAppOf } from '@session-relay/builders/locked-app'
import { parseSpinToml } from '@session-relay/builders/spin-toml'
import { templateFiles } from '@session-relay/spin/templates'
import { unpackArchive } from '@session-relay/spin/source/archive'
import { JOB, SECRET } from '../fixtures/kube-real.js'
import { REPOSITORY, startRealClusterControl } from '../helpers/cluster.js'
import { createApp, firstFunction } from '../helpers/control.js'

type Container = {
  image: string
  env: Array<{ name: string; value: string }>
  resources: unknown
  securityContext?: { readOnlyRootFilesystem?: boolean }
  volumeMounts: Array<{ name: string; mountPath: string }>
}
type JobSpec = {
  activeDeadlineSeconds: number
  template: { spec: { containers: Container[]; volumes: Array<{ name: string }> } }
}

const LIMITS = { maxArchiveBytes: 1024 * 1024, maxFiles: 100, maxBytes: 8 * 1024 * 1024 }

for (const language of ['go', 'rust'] as const) {
  t.test(`a ${language} build Job carries what the ${language} builder image needs`, async (t) => {
    const { control, kube } = await startRealClusterControl(t, 'pglite')
    const name = `hello-${language}`
    const app = await createApp(control, name, { language })
    const fn = firstFunction(app)
    const started = await control.call('POST', `/applications/${app.id}/builds`)
    t.equal(started.status, 202)
    const buildId = (started.body as { id: string }).id
    const job = await kube.get(JOB, `build-${buildId}`)
    if (job === undefined) return t.fail('no Job')
    const spec = job.spec as JobSpec
    const container = spec.template.spec.containers[0] as Container
    t.equal(container.image, `builders.test/${language}:1`, "the language's builder image")
    t.same(
      Object.fromEntries(container.env.map((variable) => [variable.name, variable.value])),
      {
        IMAGE_REF: `${REPOSITORY}/${name}:${buildId}`,
        APPLICATION: name,
        LANGUAGE: language,
        BUILD_ID: buildId,
        SOURCE_ARCHIVE: '/workspace/source/source.tar.gz',
      },
      "the contract's settings only: the image's RUST_ROOT and PATH stand, the cache is the build's own",
    )
    t.equal(container.securityContext?.readOnlyRootFilesystem, true, 'a read-only root')
    const tmp = container.volumeMounts.find((mount) => mount.mountPath === '/tmp')
    t.same(
      spec.template.spec.volumes.find((volume) => volume.name === tmp?.name),
      { name: 'tmp', emptyDir: { sizeLimit: '4Gi' } },
      "where the build's caches go: a writable emptyDir /tmp, the size of the disk limit",
    )
    const resources = { cpu: '1', memory: '2Gi', 'ephemeral-storage': '4Gi' }
    t.same(container.resources, { requests: resources, limits: resources })
    t.equal(spec.activeDeadlineSeconds, 900, 'the default deadline, past a cold build of the template in the image')

    const secret = await kube.get(SECRET, `build-${buildId}`)
    const archive = Buffer.from((secret?.data as Record<string, string>)['source.tar.gz'] as string, 'base64')
    const files = await unpackArchive(Readable.from([archive]), LIMITS)
    const template = templateFiles(language, fn.name)
    t.same(
      Object.keys(files).sort(),
      ['spin.toml', ...Object.keys(template).map((path) => `functions/${fn.name}/${path}`)].sort(),
      "the template's files",
    )
    const trigger = lockedAppOf(parseSpinToml(files['spin.toml'] as string)).triggers[0]?.trigger_config
    t.same(
      trigger,
      { component: fn.name, route: '/...', ...(language === 'go' ? { executor: { type: 'wagi' } } : {}) },
      language === 'go'
        ? "go: the WAGI executor, which the shim's http trigger carries"
        : 'rust: a component, the default executor',
    )
  })
}
