// What a tenant's SpinApps pull their images with when the control plane is the registry's
// token server: one kubernetes.io/dockerconfigjson Secret per tenant, holding a credential the
// token server honours for pull on that tenant's repositories only, so a pod (or whoever reads
// the Secret) of one tenant cannot pull another's images. Written at each deploy, so a new
// registry key reaches every tenant with its next deploy; never read back.
import { createHash } from 'node:crypto'
import type { V1Secret } from '@kubernetes/client-node'
import type { ControlConfig } from '../config.js'
import { dockerConfigJson, mintCredential } from '../registry/credentials.js'
import { registryHosts } from '../registry/repositories.js'
import type { RegistrySigner } from '../registry/signing-key.js'
import { MANAGED_BY } from './build-jobs.js'
import type { Kube } from './kube.js'
import { mergeSecret } from './merge-secret.js'

// Tenants come from a token's claim: any text. The Secret's name takes a digest of it.
export const tenantPullSecretName = (tenant: string): string =>
  `registry-pull-${createHash('sha256').update(tenant).digest('hex').slice(0, 16)}`

export async function writeTenantPullSecret(
  kube: Kube,
  config: ControlConfig,
  signer: RegistrySigner,
  tenant: string,
): Promise<string> {
  const name = tenantPullSecretName(tenant)
  const credential = await mintCredential(signer, { kind: 'tenant', tenant }, null)
  const data = {
    '.dockerconfigjson': Buffer.from(dockerConfigJson(registryHosts(config), credential)).toString('base64'),
  }
  const metadata = {
    labels: { ...MANAGED_BY, 'app.kubernetes.io/component': 'registry-pull' },
    annotations: { 'platform.wasmkube.dev/tenant': tenant },
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
