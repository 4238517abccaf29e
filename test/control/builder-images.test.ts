// --builder-images' default: the project's builder images of this release, named as the docs
// and the deploy/ manifests name them, so a fresh install's builds run the images its
// operator built from builders/ (builders/README.md).
import { readFileSync } from 'node:fs'
import t from 'tap'
import { parseConfig } from '@session-relay/control/config'

const root = new URL('../../', import.meta.url)
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8')
const { version } = JSON.parse(read('package.json')) as { version: string }
const IMAGES = {
  js: `registry.example.com/session-relay/builder-js:${version}`,
  go: `registry.example.com/session-relay/builder-go:${version}`,
  rust: `registry.example.com/session-relay/builder-rust:${version}`,
}
const SKIP = ['--dev-insecure-skip-auth']

t.test('by default every language has the builder image of this release', async (t) => {
  t.same(parseConfig(SKIP, {}).builderImages, { go: IMAGES.go, js: IMAGES.js, ts: IMAGES.js, rust: IMAGES.rust })
})

t.test('a value replaces the whole list: a language it leaves out has no builder', async (t) => {
  t.same(parseConfig([...SKIP, '--builder-images', 'go=registry.internal/builder-go:2'], {}).builderImages, {
    go: 'registry.internal/builder-go:2',
    js: '',
    ts: '',
    rust: '',
  })
})

t.test('the docs name the same images, and say how to build and push each', async (t) => {
  const builders = read('builders/README.md')
  for (const [language, image] of Object.entries(IMAGES)) {
    t.ok(builders.includes(image), `builders/README.md names ${image}`)
    t.ok(
      builders.includes(`-f builders/Dockerfile.${language} -t ${image} .`),
      `builders/README.md builds ${image} from builders/Dockerfile.${language}`,
    )
    t.ok(builders.includes(`push ${image}`), `builders/README.md pushes ${image}`)
  }
  const kubernetes = read('docs/control-plane.md')
  for (const image of Object.values(IMAGES))
    t.ok(kubernetes.includes(image), `docs/control-plane.md's Kubernetes section names ${image}`)
})

t.test('the deploy/ manifests configure the same images', async (t) => {
  const line = read('deploy/base/control/control.settings')
    .split('\n')
    .find((entry) => entry.startsWith('PLATFORM_BUILDER_IMAGES='))
  t.ok(line, 'deploy/base/control/control.settings sets PLATFORM_BUILDER_IMAGES')
  t.same(
    parseConfig(SKIP, { PLATFORM_BUILDER_IMAGES: line!.slice(line!.indexOf('=') + 1) }).builderImages,
    parseConfig(SKIP, {}).builderImages,
  )
})
