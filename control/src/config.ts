// The control plane's settings: each section's table lives beside the modules that read it
// (http/settings.ts, cluster/settings.ts, ...); this composes them into the one table that is
// parsed once at the start, printed by --help and rendered into docs/control-plane.md, and
// checks what spans sections. Modules take their section's type, never ControlConfig: only the
// composition root (server.ts, main.ts) holds the whole.
import type { Setting } from '@session-relay/common/config/settings'
import { readSettings, settingGiven, unauthenticatedAddress, usage } from '@session-relay/common/config/settings'
import type { ClusterSettings } from './cluster/settings.js'
import { checkClusterSettings, clusterSettings } from './cluster/settings.js'
import type { PolicySettings } from './domain/policy-settings.js'
import { checkPolicySettings, policySettings } from './domain/policy-settings.js'
import type { AuthSettings } from './http/auth-settings.js'
import { authSettings, checkAuthSettings } from './http/auth-settings.js'
import type { HttpSettings } from './http/settings.js'
import { httpSettings } from './http/settings.js'
import type { LocalSettings } from './local/settings.js'
import { localSettings } from './local/settings.js'
import type { MetricsSettings } from './metrics/settings.js'
import { metricsSettings } from './metrics/settings.js'
import type { RegistrySettings } from './registry/settings.js'
import { registrySettings } from './registry/settings.js'
import type { RuntimeSettings } from './runtime/settings.js'
import { runtimeSettings } from './runtime/settings.js'
import type { StoreSettings } from './store/settings.js'
import { storeSettings } from './store/settings.js'
import type { TracingSettings } from './tracing/settings.js'
import { tracingSettings } from './tracing/settings.js'

export type ControlConfig = HttpSettings &
  AuthSettings &
  StoreSettings &
  RuntimeSettings &
  PolicySettings &
  RegistrySettings &
  ClusterSettings &
  LocalSettings &
  MetricsSettings &
  TracingSettings

/**
 * What the domain and the routes read: the application policy, the registry, metrics, the
 * store's key, a tenant's share of builds, an upload's size, the tenant claim and the namespace
 * the metrics are labelled with; never the runtimes' own settings.
 */
export type DomainSettings = PolicySettings &
  RegistrySettings &
  MetricsSettings &
  StoreSettings &
  Pick<RuntimeSettings, 'maxTenantBuilds'> &
  Pick<HttpSettings, 'maxArchiveBytes'> &
  Pick<AuthSettings, 'tenantClaim'> &
  Pick<ClusterSettings, 'namespace'>

// The order of --help and of the docs' table: the server, its state, its callers, then what
// builds and runs the applications.
const rows = [
  ...httpSettings,
  ...storeSettings,
  ...authSettings,
  ...runtimeSettings,
  ...policySettings,
  ...registrySettings,
  ...clusterSettings,
  ...localSettings,
  ...metricsSettings,
  ...tracingSettings,
]

// Fails to compile when a section's field has no row in its table.
type MissingSettings = Exclude<keyof ControlConfig, (typeof rows)[number]['key']>
const everySettingListed: [MissingSettings] extends [never] ? true : MissingSettings = true
void everySettingListed

// Each row parses one field of its section, so one of the whole; Setting is invariant in its
// object type, which only the cast gets past.
export const settings = rows as unknown as ReadonlyArray<Setting<ControlConfig>>

export function parseConfig(argv: string[], env: Record<string, string | undefined>): ControlConfig {
  const config = readSettings(settings, argv, env)
  checkAuthSettings(config)
  // Authentication off hands the API to whoever reaches the port: loopback unless said otherwise.
  if (config.devInsecureSkipAuth) {
    config.addr = unauthenticatedAddress(config.addr, settingGiven(settings, 'addr', argv, env), {
      allowed: config.devInsecureListenAnywhere,
      flag: '--dev-insecure-listen-anywhere',
      authFlag: '--dev-insecure-skip-auth',
    })
  }
  checkPolicySettings(config)
  checkClusterSettings(config)
  return config
}

export const controlUsage = (): string => usage(settings)
