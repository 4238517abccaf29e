// Running an image without a container runtime (crun cannot start containers in this
// sandbox): its root from `podman image mount`, bound read-only as Kubernetes'
// readOnlyRootFilesystem would have it, with /proc, a few device nodes, a tmpfs /tmp and a
// fresh writable directory for each declared VOLUME; its entrypoint run there by `chroot` as
// the image's USER, with the image's ENV and WORKDIR. The host network is shared, so the
// listen address is moved to a free loopback port.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { removeDir, runSync } from './image-host.js'
import type { Podman, UndoStack } from './image-host.js'

export type ImageConfig = {
  user: string
  env: string[]
  workingDir: string
  entrypoint: string[]
  cmd: string[]
  volumes: string[]
  exposedPorts: string[]
  /** The HEALTHCHECK test as Docker stores it: ["CMD", ...] or ["CMD-SHELL", "..."]. */
  healthcheck: string[]
  size: number
}

export async function inspectImage(podman: Podman, name: string): Promise<ImageConfig> {
  const [image] = JSON.parse(await podman(['image', 'inspect', name])) as Array<{
    Config?: {
      User?: string
      Env?: string[]
      WorkingDir?: string
      Entrypoint?: string[]
      Cmd?: string[]
      Volumes?: Record<string, unknown>
      ExposedPorts?: Record<string, unknown>
    }
    Healthcheck?: { Test?: string[] }
    Size?: number
  }>
  const config = image?.Config ?? {}
  return {
    user: config.User ?? '',
    env: config.Env ?? [],
    workingDir: config.WorkingDir || '/',
    entrypoint: config.Entrypoint ?? [],
    cmd: config.Cmd ?? [],
    volumes: Object.keys(config.Volumes ?? {}),
    exposedPorts: Object.keys(config.ExposedPorts ?? {}),
    healthcheck: image?.Healthcheck?.Test ?? [],
    size: image?.Size ?? 0,
  }
}

/** `10001:10001` to numbers; null for a name, which Kubernetes' runAsNonRoot cannot verify. */
export function numericUser(user: string): { uid: number; gid: number } | null {
  const match = /^(\d+)(?::(\d+))?$/.exec(user)
  if (match === null) return null
  const uid = Number(match[1])
  return { uid, gid: match[2] === undefined ? uid : Number(match[2]) }
}

export type ImageRoot = {
  dir: string
  /** Each declared VOLUME and the host directory mounted there. */
  volumes: Map<string, string>
}

function mount(args: string[]): void {
  const result = runSync('mount', args)
  if (!result.ok) throw new Error(`mount ${args.join(' ')}: ${result.output}`)
}

function unmountLater(undo: UndoStack, dir: string): void {
  undo.push(`umount ${dir}`, () => {
    const result = runSync('umount', [dir])
    // A mount still busy is detached lazily rather than left behind.
    if (!result.ok && !runSync('umount', ['-l', dir]).ok) throw new Error(result.output)
  })
}

export async function mountImageRoot(
  podman: Podman,
  name: string,
  config: ImageConfig,
  owner: { uid: number; gid: number },
  workDir: string,
  undo: UndoStack,
): Promise<ImageRoot> {
  const merged = (await podman(['image', 'mount', name])).trim()
  undo.push(`podman image unmount ${name}`, () => {
    const result = podman.sync(['image', 'unmount', name])
    if (!result.ok) throw new Error(result.output)
  })

  const dir = mkdtempSync(join(workDir, 'root-'))
  mount(['--bind', merged, dir])
  unmountLater(undo, dir)
  mount(['-o', 'remount,bind,ro', dir])

  mount(['-t', 'proc', '-o', 'nosuid,nodev,noexec', 'proc', join(dir, 'proc')])
  unmountLater(undo, join(dir, 'proc'))
  mount(['-t', 'tmpfs', '-o', 'mode=755,nosuid,noexec,size=64k', 'tmpfs', join(dir, 'dev')])
  unmountLater(undo, join(dir, 'dev'))
  for (const device of ['null', 'zero', 'full', 'random', 'urandom']) {
    writeFileSync(join(dir, 'dev', device), '')
    mount(['--bind', `/dev/${device}`, join(dir, 'dev', device)])
    unmountLater(undo, join(dir, 'dev', device))
  }
  // The writable scratch space the Kubernetes manifests give the pods as an emptyDir.
  mount(['-t', 'tmpfs', '-o', 'mode=1777,nosuid,nodev,size=64m', 'tmpfs', join(dir, 'tmp')])
  unmountLater(undo, join(dir, 'tmp'))

  const volumes = new Map<string, string>()
  for (const volume of config.volumes) {
    if (!existsSync(join(dir, volume))) throw new Error(`VOLUME ${volume} does not exist in the image`)
    // A fresh volume as Kubernetes makes one with fsGroup: writable by the pod's user.
    const hostDir = mkdtempSync(join(workDir, 'volume-'))
    undo.push(`rm ${hostDir}`, () => removeDir(hostDir))
    chownSync(hostDir, owner.uid, owner.gid)
    mount(['--bind', hostDir, join(dir, volume)])
    unmountLater(undo, join(dir, volume))
    volumes.set(volume, hostDir)
  }
  return { dir, volumes }
}

/** Binds a host directory, writable, at `inside` (made under the root's tmpfs /tmp). */
export function bindInto(root: ImageRoot, hostDir: string, inside: string, undo: UndoStack): string {
  if (!inside.startsWith('/tmp/')) throw new Error(`${inside}: only /tmp is writable in the read-only root`)
  const target = join(root.dir, inside)
  mkdirSync(target, { recursive: true })
  mount(['--bind', hostDir, target])
  unmountLater(undo, target)
  return target
}

export type Started = {
  child: ChildProcess
  pid: number
  stdout: () => string
  stderr: () => string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** The environment the image declares, with `overrides` on top, as a runtime would pass it. */
export function imageEnv(config: ImageConfig, overrides: Record<string, string>): string[] {
  const env = new Map<string, string>([['HOME', '/']])
  for (const entry of config.env) {
    const equals = entry.indexOf('=')
    env.set(entry.slice(0, equals), entry.slice(equals + 1))
  }
  for (const [key, value] of Object.entries(overrides)) env.set(key, value)
  return [...env].map(([key, value]) => `${key}=${value}`)
}

/** Runs `argv` in the root as the image's user, in its WORKDIR, with exactly `env`. */
export function startInRoot(
  root: ImageRoot,
  config: ImageConfig,
  owner: { uid: number; gid: number },
  argv: string[],
  env: string[],
  undo: UndoStack,
): Started {
  const child = spawn(
    'chroot',
    [
      `--userspec=${owner.uid}:${owner.gid}`,
      `--groups=${owner.gid}`,
      root.dir,
      '/usr/bin/env',
      '-i',
      '-C',
      config.workingDir,
      ...env,
      ...argv,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code, signal) => resolve({ code, signal }))
  })
  const pid = child.pid ?? -1
  undo.push(`kill ${argv.join(' ')}`, () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGKILL')
    // The root cannot be unmounted while the process still holds it.
    const deadline = Date.now() + 5_000
    while (holdsOn(pid) && Date.now() < deadline) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20)
  })
  return { child, pid, stdout: () => stdout, stderr: () => stderr, exited }
}

// Alive and not yet a zombie: nobody reaps while the undo steps block the event loop, and a
// zombie holds no mounts.
function holdsOn(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))
  } catch {
    return false
  }
}
