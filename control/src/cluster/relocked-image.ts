// What a SpinApp runs: the built image re-locked to declare the application's variable names
// (spin/src/relock.ts), pushed beside it in the registry of --image-repository and pinned
// by digest, so a new name takes effect without a rebuild as a new value does (only the lock,
// the config and the manifest are pushed; the compiled layers are the build's).
import { relockReference } from '@session-relay/spin/relock'
import type { RelockOptions } from '@session-relay/spin/relock'
import type { StoreOptions } from '@session-relay/spin/store'
import type { ClusterRuntimeConfig } from './settings.js'
import { HttpError, UnavailableError } from '@session-relay/common/errors'
import type { AppSettings } from '../model/app-settings.js'
import type { RegistrySigner } from '../registry/signing-key.js'
import type { Kube } from './kube.js'
import { withRegistryCredentials } from './registry-credentials.js'

// Per registry request: the lock, config and manifest are a few KiB, and a PATCH waits for them.
const RELOCK_TIMEOUT_MS = 10_000

/** relockReference's shape: tests whose images are in no registry replace it. */
export type Relock = (image: string, names: readonly string[], options: StoreOptions & RelockOptions) => Promise<string>

/**
 * `image` re-locked with the names of `settings.variables`; `image` itself when there are none
 * (no credential is read). A failure is a 503 naming the reason, before anything is applied, so
 * the running SpinApp stays as it is.
 */
export async function relockedImage(
  kube: Kube,
  config: ClusterRuntimeConfig,
  image: string,
  settings: AppSettings,
  options: { relock?: Relock | undefined; signer: RegistrySigner | null },
): Promise<string> {
  const relock = options.relock ?? relockReference
  const names = Object.keys(settings.variables).sort()
  if (names.length === 0) return image
  // Spin keeps a secret variable's value out of its own logs.
  const secret = new Set(names.filter((name) => !('value' in (settings.variables[name] as object))))
  return withRegistryCredentials(kube, config, options.signer, image, async (dockerConfigDir) => {
    try {
      return await relock(image, names, {
        dockerConfigDir,
        insecure: config.registryInsecure,
        secret,
        timeoutMs: RELOCK_TIMEOUT_MS,
      })
    } catch (error) {
      if (error instanceof HttpError) throw error
      // The registry client's messages carry no credential.
      throw new UnavailableError(
        `the image could not be re-locked with the variables' names (${(error as Error).message}); the running deployment is unchanged`,
      )
    }
  })
}
