// The image registry: where builds push and nodes pull, how it is reached, the credentials
// file the processes on this machine use, and the token server the control plane can be for it.
import { anyText, parseBoolean, parseTimerDuration } from '@session-relay/common/config/settings'
import { rowOf, withoutTrailingSlash } from '../setting-parsers.js'

export type RegistrySettings = {
  imageRepository: string // where builders push, without trailing slash
  imagePullRepository: string // where nodes pull those images from, when another name reaches the same registry
  registryInsecure: boolean // the registry speaks plain HTTP
  dockerConfig: string | null // DOCKER_CONFIG, as docker reads it; null: no credentials file
  registryTokenKey: string // '' : the control plane is no token server for the registry
  registryTokenService: string // the registry's auth.token.service
  registryPullCredentialTtlMs: number // life of a tenant's pull credential; renewed at half of it
}

const setting = rowOf<RegistrySettings>()

// An image reference up to the tag: registry host, optional port and path, no tag or digest.
function parseImageRepository(text: string): string {
  if (text === '') return ''
  const trimmed = withoutTrailingSlash(text)
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]+)?(\/[a-z0-9]+([._-][a-z0-9]+)*)*$/.test(trimmed))
    throw new Error('expected a registry and path such as registry.example.com/apps')
  return trimmed
}

// A credential is checked in whole seconds and renewed at half its life: minutes at the least.
function parseCredentialTtl(text: string): number {
  const ms = parseTimerDuration(text)
  if (ms < 10 * 60_000) throw new Error('expected a duration of at least 10m, e.g. 24h')
  return ms
}

export const registrySettings = [
  setting({
    key: 'imageRepository',
    env: 'PLATFORM_IMAGE_REPOSITORY',
    flag: '--image-repository',
    default: '',
    parse: parseImageRepository,
    help: 'registry and path builds push to; empty: builds answer 503',
  }),
  setting({
    key: 'imagePullRepository',
    env: 'PLATFORM_IMAGE_PULL_REPOSITORY',
    flag: '--image-pull-repository',
    default: '',
    parse: parseImageRepository,
    help: 'where the nodes pull built images from, if not --image-repository',
  }),
  setting({
    key: 'registryInsecure',
    env: 'PLATFORM_REGISTRY_INSECURE',
    flag: '--registry-insecure',
    default: 'false',
    parse: parseBoolean,
    help: 'the registry of --image-repository speaks plain HTTP',
  }),
  setting({
    key: 'dockerConfig',
    env: 'DOCKER_CONFIG',
    flag: '--docker-config',
    default: '',
    parse: (text) => (text === '' ? null : text),
    help: 'directory of a Docker config.json: the registry credentials of builds, pulls, image sizes',
  }),
  setting({
    key: 'registryTokenKey',
    env: 'PLATFORM_REGISTRY_TOKEN_KEY',
    flag: '--registry-token-key',
    default: '',
    parse: anyText,
    help: "PEM key and certificate: serve the registry's tokens; empty: off",
  }),
  setting({
    key: 'registryTokenService',
    env: 'PLATFORM_REGISTRY_TOKEN_SERVICE',
    flag: '--registry-token-service',
    default: 'registry',
    parse: anyText,
    help: "with --registry-token-key: the registry's auth.token.service",
  }),
  setting({
    key: 'registryPullCredentialTtlMs',
    env: 'PLATFORM_REGISTRY_PULL_CREDENTIAL_TTL',
    flag: '--registry-pull-credential-ttl',
    default: '24h',
    parse: parseCredentialTtl,
    help: "with --registry-token-key: life of a tenant's pull Secret, renewed at half of it",
  }),
]
