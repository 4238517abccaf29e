// Which build the deployment runs. In a cluster, variables re-lock the build's image with their
// names under a new digest that matches no build's image, so the page says which build it was
// and why the digests differ, rather than showing an image no build made.
import type { Application } from '../api/types'

type Deployment = NonNullable<Application['deployment']>
type Build = Application['builds'][number]

/** An image's digest, shortened to what people compare by eye. */
const digestOf = (image: string): string => {
  const digest = image.slice(image.lastIndexOf('@') + 1)
  return digest.startsWith('sha256:') ? digest.slice(0, 'sha256:'.length + 12) : digest
}

const shortId = (id: string): string => id.slice(0, 8)

export function RunningBuild({ deployment, builds }: { deployment: Deployment; builds: Build[] }) {
  const build = builds.find((b) => b.id === deployment.buildId)
  if (build === undefined)
    return (
      <span class="muted" data-testid="running-build">
        not known: the image matches no build of this application
      </span>
    )
  const name = (
    <>
      <code>{shortId(build.id)}</code> of {new Date(build.createdAt).toLocaleString()}
    </>
  )
  if (build.imageRef === deployment.image) return <span data-testid="running-build">build {name}, as built</span>
  return (
    <span data-testid="running-build">
      build {name}, re-locked with the variables' names: digest <code>{digestOf(deployment.image)}</code> differs from
      the build's <code>{digestOf(build.imageRef ?? '')}</code>
    </span>
  )
}
