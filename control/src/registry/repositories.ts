// Names in the registry: --image-repository is a host and a path (registry.example.com/apps);
// an application's images are in the repository {path}/{cluster name}, which the nodes may
// reach by another host (--image-pull-repository) under the same path.
import type { RegistrySettings } from './settings.js'

type Repositories = Pick<RegistrySettings, 'imageRepository' | 'imagePullRepository'>

const hostOf = (repository: string): string => repository.split('/')[0]!
const pathOf = (repository: string): string => repository.split('/').slice(1).join('/')

/** The repository (without host) an application's builds push to. */
export function repositoryOf(config: Repositories, clusterName: string): string {
  const path = pathOf(config.imageRepository)
  return path === '' ? clusterName : `${path}/${clusterName}`
}

/** The application's cluster name a repository belongs to, or null when it is none of ours. */
export function clusterNameOf(config: Repositories, repository: string): string | null {
  for (const configured of [config.imageRepository, config.imagePullRepository]) {
    if (configured === '') continue
    const path = pathOf(configured)
    const rest = path === '' ? repository : repository.startsWith(`${path}/`) ? repository.slice(path.length + 1) : null
    if (rest !== null && rest !== '' && !rest.includes('/')) return rest
  }
  return null
}

/** The hosts a credential is presented to: the builders' and the nodes' names of the registry. */
export function registryHosts(config: Repositories): string[] {
  return [...new Set([config.imageRepository, config.imagePullRepository].filter((r) => r !== '').map(hostOf))]
}
