// What both runtimes share: which one runs, how long a build and an invoke may take, and how
// many builds one tenant may hold, and how often deployments are reconciled. Read by server.ts,
// both runtimes, domain/builds.ts and domain/reconcile.ts.
import { parseTimerDuration } from '@session-relay/common/config/settings'
import { integerUpTo, parseSeconds, rowOf } from '../setting-parsers.js'

/** Where builds and deployments run: auto picks the cluster when one is configured or found, else this machine. */
type RuntimeChoice = 'auto' | 'cluster' | 'local'

export type RuntimeSettings = {
  runtime: RuntimeChoice
  maxTenantBuilds: number // builds running and queued per tenant, both runtimes
  buildTimeoutMs: number
  invokeTimeoutMs: number
  resyncIntervalMs: number // every deployment is compared with what should run this often
}

const setting = rowOf<RuntimeSettings>()

function parseRuntime(text: string): RuntimeChoice {
  if (text !== 'auto' && text !== 'cluster' && text !== 'local') throw new Error('expected auto, cluster or local')
  return text
}

export const runtimeSettings = [
  setting({
    key: 'runtime',
    env: 'PLATFORM_RUNTIME',
    flag: '--runtime',
    default: 'auto',
    parse: parseRuntime,
    help: 'where builds and deployments run: cluster, local or auto',
  }),
  setting({
    key: 'maxTenantBuilds',
    env: 'PLATFORM_MAX_TENANT_BUILDS',
    flag: '--max-tenant-builds',
    default: '6',
    parse: integerUpTo(1000),
    help: 'builds one tenant may have running and queued at once, then 429',
  }),
  setting({
    key: 'buildTimeoutMs',
    env: 'PLATFORM_BUILD_TIMEOUT',
    flag: '--build-timeout',
    default: '15m',
    parse: parseSeconds,
    help: "the build Job's activeDeadlineSeconds; past it the build fails (DeadlineExceeded: ...)",
  }),
  setting({
    key: 'invokeTimeoutMs',
    env: 'PLATFORM_INVOKE_TIMEOUT',
    flag: '--invoke-timeout',
    default: '30s',
    parse: parseTimerDuration,
    help: 'how long invoke waits for the function; past it the result is 504',
  }),
  setting({
    key: 'resyncIntervalMs',
    env: 'PLATFORM_RESYNC_INTERVAL',
    flag: '--resync-interval',
    default: '30s',
    parse: parseSeconds,
    help: 'how often each deployment is compared with what should run and applied again if not',
  }),
]
