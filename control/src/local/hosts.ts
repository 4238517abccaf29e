// Deployments on this machine: per application, the host program serving its pulled Spin
// application on a loopback port, as the SpinApp's pods do in a cluster. A redeploy replaces
// the process; delete and shutdown stop it. The host prints one JSON line with its URL when it
// listens: until then the deployment is not ready. A host that exits on its own is started
// again after a backoff that doubles up to a cap, as a pod's container is restarted.
// Variables reach the host over its stdin (--variables-stdin), never through an environment
// another process could read, and the artifact is re-locked to declare exactly their names (common/src/spin/relock.ts):
// a new value or a new name is a restart, never a rebuild. Values are never logged.
import type { ChildProcess } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { relockReference } from '../../../common/src/spin/relock.js'
import type { Logger } from '../logger.js'
import type { LogBuffer } from './log-buffer.js'
import { createLogBuffer } from './log-buffer.js'
import { childEnv, startNode, stopChild } from './children.js'

/** A local deployment as it is now. */
export type DeploymentStatus = { image: string; running: boolean; ready: boolean; url: string | null; message: string }

const MAX_APP_LOG_BYTES = 1024 * 1024
const STOP_GRACE_MS = 5000

export type LocalHostsDeps = {
  logger: Logger
  /** Working directory of the hosts. */
  dir: string
  /** The host's main.js; a function so a missing program is reported at deploy time. */
  host: () => string
  env: Record<string, string>
  /** How relocking reaches the artifact's store (the host pulls with the same settings). */
  registry?: { dockerConfigDir: string | null; insecure: boolean }
  /** The first restart's delay after a host exits on its own, doubled per exit up to maxMs. */
  restartBackoff?: { initialMs: number; maxMs: number }
}

export type LocalHosts = {
  /**
   * Start (or restart) the application's host on `image` with these variable values (name to
   * value); resolves once it is started, not ready. Throws when the artifact cannot be re-locked.
   */
  deploy (app: { id: string }, image: string, variables?: Record<string, string> | Promise<Record<string, string>>): Promise<void>
  /** What runs for the application now, or null when nothing was deployed in this process. */
  status (appId: string): DeploymentStatus | null
  /** The host's URL once it listens (waiting up to `timeoutMs`); null when it is not deployed, an Error saying why when it cannot answer. */
  url (appId: string, timeoutMs: number): Promise<string | null | Error>
  log (appId: string, options: { follow: boolean; tailLines?: number | undefined }): Readable | null
  remove (appId: string): Promise<void>
  /** Stop the hosts a previous process left running (it was killed outright), by their pid files. */
  reapOrphans (): void
  close (): Promise<void>
}

type Instance = {
  appId: string
  /** What runs: the image re-locked with the variables' names (the image itself when there are none). */
  image: string
  env: Record<string, string>
  /** The variables' values by name, written to the host's stdin at each start. */
  variables: Record<string, string>
  child: ChildProcess | null
  log: LogBuffer
  url: string | null
  /** Why it does not run, when it does not. */
  problem: string | null
  /** Settles when the current child listens or ends; replaced at each restart. */
  listening: Promise<void>
  listened: () => void
  stopping: boolean
  /** Exits in a row without staying up, which sets the next restart's delay. */
  restarts: number
  restartTimer: NodeJS.Timeout | null
  readyAt: number
}

const DEFAULT_BACKOFF = { initialMs: 1000, maxMs: 30_000 }
/** A host up this long after it listened has recovered: its next exit starts the backoff over. */
const STABLE_MS = 10_000
const VARIABLE_ENV_PREFIX = 'SPIN_VARIABLE_'

export function createLocalHosts (deps: LocalHostsDeps): LocalHosts {
  const { logger } = deps
  const backoff = deps.restartBackoff ?? DEFAULT_BACKOFF
  const instances = new Map<string, Instance>()
  let closing = false

  async function stop (appId: string): Promise<void> {
    const instance = instances.get(appId)
    if (instance === undefined) return
    instances.delete(appId)
    await stopInstance(instance)
  }

  async function stopInstance (instance: Instance): Promise<void> {
    instance.stopping = true
    if (instance.restartTimer !== null) clearTimeout(instance.restartTimer)
    if (instance.child !== null) await stopChild(instance.child, STOP_GRACE_MS)
    // Between a crash and its restart no child would end the followers' streams.
    instance.log.end()
    instance.listened()
    if (instances.get(instance.appId) === undefined) rmSync(pidFile(instance.appId), { force: true })
  }

  const pidFile = (appId: string): string => join(deps.dir, `${appId}.pid`)
  const cacheDir = join(deps.dir, 'cache')

  function newListening (instance: Instance): void {
    instance.listening = new Promise((resolve) => { instance.listened = resolve })
  }

  function start (instance: Instance): void {
    const appId = instance.appId
    let main: string
    try {
      main = deps.host()
    } catch (error) {
      instance.problem = (error as Error).message
      instance.listened()
      throw error
    }
    mkdirSync(deps.dir, { recursive: true })
    // Port 0: the host picks a free one and names it in its first line, so no two can race for one.
    const child = startNode(main, ['--ref', instance.image, '--port', '0', '--host', '127.0.0.1', '--cache-dir', cacheDir, '--variables-stdin'], { cwd: deps.dir, env: instance.env, stdin: JSON.stringify(instance.variables) })
    instance.child = child
    if (child.pid !== undefined) writeFileSync(pidFile(appId), `${child.pid}\n`)
    logger.info({ appId, image: instance.image, pid: child.pid, restarts: instance.restarts }, 'local deployment starting')
    const { log } = instance
    let pending = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      log.write(chunk)
      if (instance.url !== null || instance.child !== child) return
      // Only the start of the output is searched: the line comes first, and memory stays bounded.
      pending = (pending + chunk.toString('utf8')).slice(-64 * 1024)
      for (let newline = pending.indexOf('\n'); newline !== -1 && instance.url === null; newline = pending.indexOf('\n')) {
        const url = listeningUrl(pending.slice(0, newline))
        pending = pending.slice(newline + 1)
        if (url !== null) {
          instance.url = url
          instance.problem = null
          instance.readyAt = Date.now()
          logger.info({ appId, url }, 'local deployment ready')
          instance.listened()
        }
      }
    })
    child.stderr?.on('data', (chunk: Buffer) => log.write(chunk))
    child.once('error', (error) => {
      instance.problem = `the host could not start: ${error.message}`
      instance.listened()
    })
    child.once('close', (code, signal) => {
      instance.url = null
      if (instance.stopping || closing) {
        log.end()
        instance.listened()
        return
      }
      if (instance.readyAt !== 0 && Date.now() - instance.readyAt >= STABLE_MS) instance.restarts = 0
      const delay = Math.min(backoff.maxMs, backoff.initialMs * 2 ** instance.restarts)
      instance.restarts++
      instance.readyAt = 0
      instance.problem = `the host exited (${signal ?? `code ${String(code)}`}); restarting in ${delay} ms (restart ${instance.restarts}); its log says why`
      logger.warn({ appId, code, signal, delayMs: delay, restarts: instance.restarts }, 'local deployment exited; restarting it')
      // Whoever waits for this child learns it ended; a new wait covers the next one.
      const ended = instance.listened
      newListening(instance)
      ended()
      instance.restartTimer = setTimeout(() => {
        instance.restartTimer = null
        if (instance.stopping || closing) return
        try {
          start(instance)
        } catch (error) {
          logger.warn({ appId, reason: (error as Error).message }, 'local deployment could not restart')
        }
      }, delay)
    })
  }

  return {
    async deploy (app, image, variables = {}) {
      if (closing) return
      const previous = instances.get(app.id)
      // Registered at once, so a request that comes meanwhile waits for this host, not the old one.
      const instance: Instance = {
        appId: app.id, image, env: {}, variables: {}, child: null, log: createLogBuffer(MAX_APP_LOG_BYTES), url: null, problem: null,
        listening: Promise.resolve(), listened: () => {}, stopping: false, restarts: 0, restartTimer: null, readyAt: 0,
      }
      newListening(instance)
      instances.set(app.id, instance)
      let values: Record<string, string>
      let names: string[]
      try {
        values = await variables
        names = Object.keys(values).sort()
        // Relocked before the old host stops: an artifact that cannot be relocked leaves it running.
        instance.image = await relockReference(image, names, { dockerConfigDir: deps.registry?.dockerConfigDir ?? null, insecure: deps.registry?.insecure ?? false })
      } catch (error) {
        if (instances.get(app.id) === instance) {
          if (previous === undefined) instances.delete(app.id)
          else instances.set(app.id, previous)
        }
        instance.listened()
        throw error
      }
      if (previous !== undefined) await stopInstance(previous)
      // A later deploy (or a removal) took over meanwhile: it decides what runs.
      if (instances.get(app.id) !== instance || closing) {
        instance.log.end()
        instance.listened()
        return
      }
      // Only the application's own values: none the control plane's environment happens to hold.
      for (const [name, value] of Object.entries(childEnv(deps.env))) {
        if (!name.startsWith(VARIABLE_ENV_PREFIX)) instance.env[name] = value
      }
      instance.variables = values
      if (names.length > 0) logger.info({ appId: app.id, image, relocked: instance.image, variables: names }, 'variables declared in the artifact')
      start(instance)
    },
    status (appId) {
      const instance = instances.get(appId)
      if (instance === undefined) return null
      const ready = instance.url !== null
      return {
        image: instance.image,
        running: instance.child !== null && instance.child.exitCode === null && instance.child.signalCode === null,
        ready,
        url: instance.url,
        message: instance.problem ?? (ready ? '1 of 1 replicas ready' : 'starting the host'),
      }
    },
    async url (appId, timeoutMs) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const instance = instances.get(appId)
        if (instance === undefined) return null
        if (instance.url !== null) return instance.url
        const waitMs = deadline - Date.now()
        if (waitMs <= 0) return new Error(instance.problem ?? 'the host is still starting')
        let timer: NodeJS.Timeout | undefined
        const listening = instance.listening
        const settled = await Promise.race([listening.then(() => true), new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), waitMs) })])
        clearTimeout(timer)
        if (instance.url !== null) return instance.url
        // Replaced (a redeploy) or restored (a failed one): wait for whichever is current now.
        if (instances.get(appId) !== instance) continue
        // The child ended and no restart is coming (it could not start, or it was stopped): say why.
        if (settled && instance.restartTimer === null && instance.listening === listening) return new Error(instance.problem ?? 'the host is not running')
      }
    },
    log (appId, options) {
      return instances.get(appId)?.log.open(options) ?? null
    },
    remove: stop,
    reapOrphans () {
      let files: string[]
      try {
        files = readdirSync(deps.dir).filter((file) => file.endsWith('.pid'))
      } catch {
        return
      }
      for (const file of files) {
        const pid = Number(readFileSync(join(deps.dir, file), 'utf8').trim())
        rmSync(join(deps.dir, file), { force: true })
        // Only a process whose command line is one of our hosts: the pid may have been reused.
        let cmdline = ''
        try {
          cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
        } catch {
          continue
        }
        if (!Number.isInteger(pid) || pid <= 1 || !cmdline.includes(`--cache-dir\0${cacheDir}\0`)) continue
        try {
          process.kill(-pid, 'SIGKILL')
          logger.warn({ pid, app: file.slice(0, -'.pid'.length) }, 'stopped a host a previous control plane left running')
        } catch {
          // Gone meanwhile.
        }
      }
    },
    async close () {
      closing = true
      await Promise.all([...instances.keys()].map(stop))
    },
  }
}

/** The URL in the host's "listening" line: one JSON object with a url. */
function listeningUrl (line: string): string | null {
  try {
    const parsed = JSON.parse(line) as { url?: unknown }
    return typeof parsed.url === 'string' && /^http:\/\/[^/\s]+\/?$/.test(parsed.url) ? parsed.url.replace(/\/$/, '') : null
  } catch {
    return null
  }
}
