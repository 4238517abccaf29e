// Deployments on this machine: per application, the host program serving its pulled Spin
// application on a loopback port, as the SpinApp's pods do in a cluster. A redeploy replaces
// the process; delete and shutdown stop it. The host prints one JSON line with its URL when it
// listens: until then the deployment is not ready, and after an unexpected exit it says so.
import type { ChildProcess } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
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
}

export type LocalHosts = {
  /** Start (or restart) the application's host on `image`; resolves once it is started, not ready. */
  deploy (app: { id: string }, image: string): Promise<void>
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
  image: string
  child: ChildProcess | null
  log: LogBuffer
  url: string | null
  /** Why it does not run, when it does not. */
  problem: string | null
  listening: Promise<void>
  stopping: boolean
}

export function createLocalHosts (deps: LocalHostsDeps): LocalHosts {
  const { logger } = deps
  const instances = new Map<string, Instance>()
  let closing = false

  async function stop (appId: string): Promise<void> {
    const instance = instances.get(appId)
    if (instance === undefined) return
    instances.delete(appId)
    instance.stopping = true
    if (instance.child !== null) await stopChild(instance.child, STOP_GRACE_MS)
    rmSync(pidFile(appId), { force: true })
  }

  const pidFile = (appId: string): string => join(deps.dir, `${appId}.pid`)
  const cacheDir = join(deps.dir, 'cache')

  return {
    async deploy (app, image) {
      if (closing) return
      await stop(app.id)
      const log = createLogBuffer(MAX_APP_LOG_BYTES)
      let listened!: () => void
      const instance: Instance = { appId: app.id, image, child: null, log, url: null, problem: null, listening: new Promise((resolve) => { listened = resolve }), stopping: false }
      instances.set(app.id, instance)
      let main: string
      try {
        main = deps.host()
      } catch (error) {
        instance.problem = (error as Error).message
        listened()
        throw error
      }
      mkdirSync(deps.dir, { recursive: true })
      // Port 0: the host picks a free one and names it in its first line, so no two can race for one.
      const child = startNode(main, ['--ref', image, '--port', '0', '--host', '127.0.0.1', '--cache-dir', cacheDir], { cwd: deps.dir, env: childEnv(deps.env) })
      instance.child = child
      if (child.pid !== undefined) writeFileSync(pidFile(app.id), `${child.pid}\n`)
      logger.info({ appId: app.id, image, pid: child.pid }, 'local deployment starting')
      let pending = ''
      child.stdout?.on('data', (chunk: Buffer) => {
        log.write(chunk)
        if (instance.url !== null) return
        // Only the start of the output is searched: the line comes first, and memory stays bounded.
        pending = (pending + chunk.toString('utf8')).slice(-64 * 1024)
        for (let newline = pending.indexOf('\n'); newline !== -1 && instance.url === null; newline = pending.indexOf('\n')) {
          const url = listeningUrl(pending.slice(0, newline))
          pending = pending.slice(newline + 1)
          if (url !== null) {
            instance.url = url
            logger.info({ appId: app.id, url }, 'local deployment ready')
            listened()
          }
        }
      })
      child.stderr?.on('data', (chunk: Buffer) => log.write(chunk))
      child.once('error', (error) => {
        instance.problem = `the host could not start: ${error.message}`
        listened()
      })
      child.once('close', (code, signal) => {
        log.end()
        instance.url = null
        if (!instance.stopping) {
          instance.problem = `the host exited (${signal ?? `code ${String(code)}`}); its log says why; POST deploy starts it again`
          logger.warn({ appId: app.id, code, signal }, 'local deployment exited')
        }
        listened()
      })
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
      const instance = instances.get(appId)
      if (instance === undefined) return null
      let timer: NodeJS.Timeout | undefined
      await Promise.race([instance.listening, new Promise((resolve) => { timer = setTimeout(resolve, timeoutMs) })])
      clearTimeout(timer)
      if (instance.url !== null) return instance.url
      return new Error(instance.problem ?? 'the host is still starting')
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
