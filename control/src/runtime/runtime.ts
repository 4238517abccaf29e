// What the domain knows about where builds run and applications answer: this one interface.
// Three implementations: the cluster (cluster/runtime.ts), this machine (local/runtime.ts) and
// none (runtime/none.ts, every method a 503 naming the setting that would give one). The
// composition root picks one; the domain holds it and never asks which it is.
import type { Readable } from 'node:stream'
import type { AppSettings, ConcurrencyInForce, ResourcesT, StoredVariable } from '../model/app-settings.js'
import type { DeploymentT, InvokeResultT, LanguageT } from '../model/resources.js'
import type { StoredApplication } from '../store/applications.js'
import type { BuildOutcome } from '../store/builds.js'

/** `clusterName` is unique across tenants (store/applications.ts); `name` only within one. */
export type BuildApplication = { id: string; name: string; clusterName: string; language: LanguageT; tenant: string }

/** Where a build's log is now: all of it as text, a stream while it runs, or not yet anywhere. */
export type BuildLog = { kind: 'text'; text: string } | { kind: 'stream'; upstream: Readable } | { kind: 'not-started' }

/** An invoke request checked (400, 413) and ready to send; `path` is rebuilt from checked parts. */
export type PreparedInvoke = { method: string; path: string; headers: Record<string, string[]>; body: Buffer }

/** An application as it is deployed: its settings with the resources and concurrency in force under the policy now. */
export type DeployTarget = StoredApplication & { resources: ResourcesT; concurrency: ConcurrencyInForce }

/** How a build ended, told by whichever runtime ran it (domain/build-finished.ts does what follows). */
export type FinishBuild = (buildId: string, outcome: BuildOutcome) => Promise<void>

export type Runtime = {
  /** Refuses (503, 413) a build this runtime cannot run, before anything is stored. */
  checkBuild(language: LanguageT, archiveBytes: number): Promise<void>
  /** Starts the build whose pending row exists; a throw refuses it (the row is then removed). */
  startBuild(app: BuildApplication, buildId: string, archive: Buffer): Promise<void>
  /** The log of a build whose log is not stored (yet); `finished` when its row says it ended. */
  buildLog(buildId: string, finished: boolean, options: { follow: boolean; signal: AbortSignal }): Promise<BuildLog>
  /** How long a follower waits before asking again for a build log that is `not-started`. */
  logPollMs: number
  /** Refuses (503) a deploy when nothing can run here, before the image to deploy is looked for. */
  checkDeploy(): void
  /**
   * Runs `image` for the application with its settings now; resolves with what it applied, in
   * JSON (stored, and given back to `drifted`). Called by the reconcile alone (domain/reconcile.ts).
   */
  deploy(app: DeployTarget, image: string): Promise<Record<string, unknown>>
  /**
   * Whether what runs is no longer what `applied` (deploy's answer) says: deleted or edited by
   * hand in a cluster, lost by this process on a machine. A throw counts as not known: no apply.
   */
  drifted(app: StoredApplication, applied: Record<string, unknown>): Promise<boolean>
  /** The deployment of `image` (the newest successful build) as the API shows it; null when nothing can run. */
  deployment(app: StoredApplication, image: string): Promise<DeploymentT | null>
  invoke(app: StoredApplication, request: PreparedInvoke): Promise<InvokeResultT>
  /** The application's own output, from its newest running instance. */
  openLog(
    app: StoredApplication,
    options: { follow: boolean; tailLines: number | undefined; signal: AbortSignal },
  ): Promise<Readable>
  /**
   * Keeps the secret values given (`true`: the value stored now), dropping the secrets not
   * named; the stored form of each, for the application's settings.
   */
  storeSecrets(
    app: { id: string; clusterName: string; settings: AppSettings },
    secrets: ReadonlyMap<string, string | true>,
  ): Promise<Record<string, StoredVariable>>
  /** Removes what runs and what was built for the application: it is being deleted. */
  remove(app: StoredApplication): Promise<void>
  close(): Promise<void>
}
