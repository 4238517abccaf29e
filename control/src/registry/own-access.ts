// The control plane's own registry access as the token server: a credential it signs itself for
// one repository and minutes, written to a private directory as a Docker config.json only for as
// long as one push or read lasts.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { RegistryRef } from '@session-relay/spin/ref'
import { dockerConfigJson, mintCredential } from './credentials.js'
import type { RegistrySigner } from './signing-key.js'

// One re-lock or manifest read: seconds; the token server checks nothing else for these.
const OWN_CREDENTIAL_TTL_MS = 10 * 60_000

/** `use` called with a directory holding `dockerConfigJson`, removed afterwards. */
export async function withDockerConfig<T>(
  dockerConfigJson: string,
  use: (dockerConfigDir: string) => Promise<T>,
): Promise<T> {
  // mkdtemp makes it 0700: only this process's user can read what is written in it.
  const dir = await mkdtemp(join(tmpdir(), 'control-registry-'))
  try {
    await writeFile(join(dir, 'config.json'), dockerConfigJson, { mode: 0o600 })
    return await use(dir)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** `use` with a config.json good for `actions` on the repository of `ref`, for minutes. */
export async function withOwnAccess<T>(
  signer: RegistrySigner,
  ref: RegistryRef,
  actions: Array<'pull' | 'push'>,
  use: (dockerConfigDir: string) => Promise<T>,
): Promise<T> {
  const credential = await mintCredential(
    signer,
    { kind: 'control', repository: ref.repository, actions },
    OWN_CREDENTIAL_TTL_MS,
  )
  return withDockerConfig(dockerConfigJson([ref.registry], credential), use)
}
