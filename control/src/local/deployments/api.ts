// What the local runtime asks of its deployments (hosts.ts), and what they are built from.
import type { Readable } from 'node:stream'
import type { Logger } from '../../logger.js'
import type { Connections } from '../connections.js'
import type { AppStats, WorkerLimits } from '../worker-client/protocol.js'
import type { AppLimits } from './deployment.js'
import type { DeploymentStatus } from './state.js'

export type LocalHostsDeps = {
  logger: Logger
  /** The worker's working directory, its pid file and the pulled components (wasm/). */
  dir: string
  /** The worker binary; a function so a missing one is reported at deploy time. */
  worker: () => string
  /** Where the worker keeps compiled components by digest. */
  cacheDir: string
  /** Cranelift's compiled functions by content, reused by the next build's compile (worker/README.md); none: not kept. */
  functionsCacheDir?: string
  /** A component never compiled answers first from wasmtime's baseline compiler (Winch) while Cranelift compiles it (the worker's --baseline-first). */
  baselineFirst?: boolean
  /** How the artifact's store is reached (relock and pull). */
  registry?: { dockerConfigDir: string | null; insecure: boolean }
  /** The first restart's delay after the worker exits on its own, doubled per exit up to maxMs. */
  restartBackoff?: { initialMs: number; maxMs: number }
  /** Address ranges (CIDR) functions' outgoing requests may reach although internal: the worker's --allow-private-outbound. */
  allowPrivateOutbound?: string[]
  /** The worker's threads serving requests (its --threads; the worker's own default, 1, when unset). */
  threads?: number
  /** Every instance's memory together (its --memory-budget-bytes; the worker's own default, half the machine's, when unset). */
  memoryBudgetBytes?: number
  /**
   * Scale to zero: an application without a request for `timeoutMs` is unloaded (its memory
   * given back) with its port kept: the next request there, or through invoke, loads it again.
   * Checked every `sweepMs` (a quarter of the
   * timeout, at most 30 s, by default); `now` is the clock; `swept` is told the request counts
   * each sweep read (tests wait for a count rather than a time).
   */
  idle?: {
    timeoutMs: number
    sweepMs?: number
    now?: () => number
    swept?: (counts: ReadonlyMap<string, number>) => void
  }
  /** Per application, the worker's `limits` (worker/README.md); its defaults when absent. */
  limits?: WorkerLimits
}

export type LocalHosts = {
  /**
   * Load (or reload) the application into the worker from `image` with these variable values
   * (name to value) and its own limits (over `limits`); resolves once the load is under way, not done. Throws when the artifact
   * cannot be re-locked.
   */
  deploy(
    app: { id: string },
    image: string,
    variables?: Record<string, string> | Promise<Record<string, string>>,
    own?: AppLimits,
  ): Promise<void>
  /** What runs for the application now, or null when nothing was deployed in this process. */
  status(appId: string): DeploymentStatus | null
  /** The application's URL once loaded (waiting up to `timeoutMs`); null when it is not deployed, an Error saying why when it cannot answer. */
  url(appId: string, timeoutMs: number): Promise<string | null | Error>
  /** As `url`, with the kept-alive connections of what answers there (retired when it is replaced). */
  target(appId: string, timeoutMs: number): Promise<{ url: string; connections: Connections } | null | Error>
  log(appId: string, options: { follow: boolean; tailLines?: number | undefined }): Readable | null
  remove(appId: string): Promise<void>
  /** The worker's counters by application (worker/README.md, `stats`); null while no worker runs. */
  stats(): Promise<Record<string, AppStats> | null>
  /** Stop a worker a previous process left running (it was killed outright), by the pid files. */
  reapOrphans(): void
  /** `listener` is called each time the worker restarted (it exited on its own) and every application's load was issued again. */
  onRestart(listener: () => void): void
  close(): Promise<void>
}

/** The worker's flags from the deployments' settings. */
export function workerArgs(deps: LocalHostsDeps): string[] {
  const allowed = deps.allowPrivateOutbound ?? []
  return [
    '--cache-dir',
    deps.cacheDir,
    ...(deps.functionsCacheDir === undefined ? [] : ['--functions-cache-dir', deps.functionsCacheDir]),
    ...(deps.baselineFirst === true ? ['--baseline-first'] : []),
    ...(allowed.length > 0 ? ['--allow-private-outbound', allowed.join(',')] : []),
    ...(deps.threads === undefined ? [] : ['--threads', String(deps.threads)]),
    ...(deps.memoryBudgetBytes === undefined ? [] : ['--memory-budget-bytes', String(deps.memoryBudgetBytes)]),
  ]
}
