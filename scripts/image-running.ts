// An image under test: its spec, the entrypoint running in its root, and the waits on it (a
// free port, /healthz, the HEALTHCHECK, the exit on SIGTERM).
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import type { UndoStack } from './image-host.js'
import { startInRoot } from './image-root.js'
import type { ImageConfig, ImageRoot, Started } from './image-root.js'
import { check } from './image-report.js'

const START_TIMEOUT_MS = 60_000
const EXIT_TIMEOUT_MS = 10_000

type Owner = { uid: number; gid: number }
type Exercise = (running: Running) => Promise<void>
export type Running = {
  port: number
  root: ImageRoot
  config: ImageConfig
  owner: Owner
  process: Started
  undo: UndoStack
}

export type ImageSpec = {
  name: string
  dockerfile: string
  /** The setting that holds the listen address, moved to a free loopback port. */
  addressVariable: string
  /** Settings for the smoke run: no identity provider can run inside the root. */
  env: (port: number) => Record<string, string>
  /** Paths under /app that must be there, and ones that belong to the other image. */
  present: string[]
  /** Named build contexts (`--build-context name=dir`), made before the build. */
  buildContexts?: (workDir: string) => Record<string, string>
  absent: string[]
  exercise: Exercise
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0))
    })
  })
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

export async function waitForHealth(port: number, started: Started): Promise<Response> {
  const deadline = Date.now() + START_TIMEOUT_MS
  let exited = false
  void started.exited.then(() => {
    exited = true
  })
  for (;;) {
    if (exited)
      throw new Error(
        `exited before serving /healthz; stderr: ${started.stderr().slice(-2_000)} stdout: ${started.stdout().slice(-2_000)}`,
      )
    try {
      const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) })
      if (response.status === 200) return response
    } catch {}
    if (Date.now() > deadline)
      throw new Error(`no 200 from /healthz within ${START_TIMEOUT_MS} ms; stderr: ${started.stderr().slice(-2_000)}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

/** The image's HEALTHCHECK, run in its root as its user with the same environment. */
export async function healthcheck(running: Running, env: string[]): Promise<number | null> {
  const [kind, ...rest] = running.config.healthcheck
  const argv = kind === 'CMD-SHELL' ? ['/bin/sh', '-c', rest.join(' ')] : rest
  const probe = startInRoot(running.root, running.config, running.owner, argv, env, running.undo)
  return (await withTimeout(probe.exited, 15_000, 'the HEALTHCHECK command')).code
}

export function processIds(pid: number): { uid: string; gid: string; groups: string } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const field = (name: string): string => (new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status)?.[1] ?? '').trim()
  return { uid: field('Uid'), gid: field('Gid'), groups: field('Groups') }
}

export async function stopWithSigterm(running: Running, what: string): Promise<void> {
  running.process.child.kill('SIGTERM')
  const exit = await withTimeout(running.process.exited, EXIT_TIMEOUT_MS, `${what} to exit after SIGTERM`)
  check(exit.code === 0, `${what}: SIGTERM exits 0 within ${EXIT_TIMEOUT_MS / 1000} s`, exit)
}
