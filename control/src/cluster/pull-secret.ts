// What a tenant's SpinApps pull their images with when the control plane is the registry's
// token server: one kubernetes.io/dockerconfigjson Secret per tenant, holding a credential the
// token server honours for pull on that tenant's repositories only, so a pod (or whoever reads
// the Secret) of one tenant cannot pull another's images. The credential expires after
// --registry-pull-credential-ttl, so one copied out of the Secret stops working; the Secret is
// rewritten with a fresh one at each deploy and, for every tenant with a deployment, once half
// that life has passed (checked hourly or every quarter of it if shorter, and at start, since a
// previous process's Secret may be old). Never read back: a process renews what it has not written itself.
import { createHash } from 'node:crypto'
import type { V1Secret } from '@kubernetes/client-node'
import type { ClusterRuntimeConfig } from './settings.js'
import type { Logger } from '../logger.js'
import { dockerConfigJson, mintCredential } from '../registry/credentials.js'
import { registryHosts } from '../registry/repositories.js'
import type { RegistrySigner } from '../registry/signing-key.js'
import { deployedTenants } from '../store/applications.js'
import type { Database } from '../store/db.js'
import { MANAGED_BY } from './build-jobs.js'
import type { Kube } from './kube.js'
import { mergeSecret } from './merge-secret.js'

// Tenants come from a token's claim: any text. The Secret's name takes a digest of it.
export const tenantPullSecretName = (tenant: string): string =>
  `registry-pull-${createHash('sha256').update(tenant).digest('hex').slice(0, 16)}`

export const PULL_EXPIRES_ANNOTATION = 'platform.wasmkube.dev/expires'

async function writeTenantPullSecret(
  kube: Kube,
  config: ClusterRuntimeConfig,
  signer: RegistrySigner,
  tenant: string,
  now: number,
): Promise<string> {
  const name = tenantPullSecretName(tenant)
  const ttlMs = config.registryPullCredentialTtlMs
  const credential = await mintCredential(signer, { kind: 'tenant', tenant }, ttlMs, now)
  const data = {
    '.dockerconfigjson': Buffer.from(dockerConfigJson(registryHosts(config), credential)).toString('base64'),
  }
  const metadata = {
    labels: { ...MANAGED_BY, 'app.kubernetes.io/component': 'registry-pull' },
    // When the credential stops working, for an operator looking at the Secret.
    annotations: {
      'platform.wasmkube.dev/tenant': tenant,
      [PULL_EXPIRES_ANNOTATION]: new Date(now + ttlMs).toISOString(),
    },
  }
  const secret: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/dockerconfigjson',
    metadata: { name, ...metadata },
    data,
  }
  await mergeSecret(kube, name, { metadata, data }, secret)
  return name
}

export type TenantPullSecrets = {
  /** Writes the tenant's Secret with a fresh credential (a deploy); its name, for the SpinApp. */
  write(tenant: string): Promise<string>
  /** Renews the Secret of every tenant with a deployment that this process has not written in half a credential's life; the tenants renewed. */
  renewDue(): Promise<string[]>
  close(): void
}

export function tenantPullSecrets(deps: {
  kube: Kube
  config: ClusterRuntimeConfig
  signer: RegistrySigner
  db: Database
  logger: Logger
  /** The clock credentials are issued by; tests move it rather than wait. */
  now: () => number
}): TenantPullSecrets {
  const { kube, config, signer, db, logger, now } = deps
  const ttlMs = config.registryPullCredentialTtlMs
  // When this process last wrote each tenant's Secret.
  const written = new Map<string, number>()
  const write = async (tenant: string): Promise<string> => {
    const at = now()
    const before = written.get(tenant)
    // Recorded first, so a check running meanwhile does not write it a second time.
    written.set(tenant, at)
    try {
      return await writeTenantPullSecret(kube, config, signer, tenant, at)
    } catch (error) {
      if (written.get(tenant) === at) {
        if (before === undefined) written.delete(tenant)
        else written.set(tenant, before)
      }
      throw error
    }
  }
  const renewDue = async (): Promise<string[]> => {
    const renewed: string[] = []
    for (const tenant of await deployedTenants(db)) {
      const last = written.get(tenant)
      if (last !== undefined && now() - last < ttlMs / 2) continue
      await write(tenant)
      renewed.push(tenant)
    }
    if (renewed.length > 0) logger.info({ tenants: renewed.length }, 'tenant registry pull Secrets renewed')
    return renewed
  }
  const renewLogged = (): void => {
    renewDue().catch((error: unknown) => {
      // Retried at the next check, still well before any credential expires.
      logger.warn({ reason: (error as Error).message }, 'could not renew the tenant registry pull Secrets')
    })
  }
  const timer = setInterval(renewLogged, Math.min(ttlMs / 4, 3_600_000))
  timer.unref()
  renewLogged()
  return { write, renewDue, close: () => clearInterval(timer) }
}
