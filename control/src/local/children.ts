// Child processes of the local runtime: each in a process group of its own, so stopping one
// stops whatever it started (the builder runs compilers), and none outlives the control plane:
// close() stops them, and a process exit that skipped close() still signals every group.
import type { ChildProcess } from 'node:child_process'
import { spawn } from 'node:child_process'

const running = new Set<ChildProcess>()
let hooked = false

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    child.kill(signal)
  }
}

/** The environment a child gets: this process's, without the control plane's own settings (a database URL may hold a password). */
export function childEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith('PLATFORM_')) env[name] = value
  }
  return { ...env, ...extra }
}

/** `node main args...` in its own process group, stdout and stderr piped, `stdin` (if any) written to its stdin. */
export function startNode(
  main: string,
  args: string[],
  options: { cwd: string; env: Record<string, string>; stdin?: string },
): ChildProcess {
  return startProgram(process.execPath, [main, ...args], options)
}

/**
 * `program args...` as startNode starts it; `openStdin` leaves its stdin open for the caller to
 * write (the worker reads commands there until it closes).
 */
export function startProgram(
  program: string,
  args: string[],
  options: { cwd: string; env: Record<string, string>; stdin?: string; openStdin?: boolean },
): ChildProcess {
  if (!hooked) {
    hooked = true
    process.on('exit', () => {
      for (const child of running) killGroup(child, 'SIGKILL')
    })
  }
  const child = spawn(program, args, {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: [options.stdin === undefined && options.openStdin !== true ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  })
  if (options.openStdin === true) {
    child.stdin?.on('error', () => {})
  } else if (options.stdin !== undefined) {
    // A child that dies before reading it is reported by its exit, not by this pipe.
    child.stdin?.on('error', () => {})
    child.stdin?.end(options.stdin)
  }
  running.add(child)
  child.on('exit', () => running.delete(child))
  child.on('error', () => running.delete(child))
  return child
}

/** Resolves when the child has exited (at once when it already has). */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return Promise.resolve()
  return new Promise((resolve) => {
    child.once('close', () => resolve())
    child.once('error', () => resolve())
  })
}

/** SIGTERM to the group, SIGKILL after `graceMs`; resolves when it has exited. */
export async function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  const done = exited(child)
  killGroup(child, graceMs === 0 ? 'SIGKILL' : 'SIGTERM')
  const timer = graceMs === 0 ? undefined : setTimeout(() => killGroup(child, 'SIGKILL'), graceMs)
  await done
  clearTimeout(timer)
}
