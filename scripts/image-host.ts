// What `npm run test:images` needs from the host: commands run to completion (output kept for
// the error message, or streamed to a log file for the long ones), podman on a store of its
// own, and one stack of undo steps that every exit path runs, so no mount or process outlives
// the script.
import { spawn, spawnSync } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createWriteStream, readFileSync, rmSync } from 'node:fs'

export type CommandOptions = {
  /** Append stdout and stderr here instead of keeping them (the builds print a lot). */
  logFile?: string
  cwd?: string
  env?: NodeJS.ProcessEnv
}

const running = new Set<ChildProcess>()

/** Runs a command to its end; resolves with its stdout, rejects with its stderr's tail. */
export function run(command: string, args: string[], opts: CommandOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    running.add(child)
    let stdout = ''
    let stderr = ''
    if (opts.logFile !== undefined) {
      const log = createWriteStream(opts.logFile, { flags: 'a' })
      child.stdout.pipe(log, { end: false })
      child.stderr.pipe(log, { end: false })
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        stderr = (stderr + chunk).slice(-4_000)
      })
      child.once('close', () => log.end())
    } else {
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk
      })
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        stderr += chunk
      })
    }
    child.once('error', (error) => {
      running.delete(child)
      reject(error)
    })
    child.once('close', (code, signal) => {
      running.delete(child)
      if (code === 0) return resolve(stdout)
      const where = opts.logFile === undefined ? '' : ` (full output in ${opts.logFile})`
      reject(
        new Error(
          `${command} ${args.join(' ')} ended with ${signal ?? `code ${code}`}${where}:\n${stderr.trim().slice(-2_000)}`,
        ),
      )
    })
  })
}

/** Synchronous, for the undo steps: they must also run from a signal handler. */
export function runSync(command: string, args: string[]): { ok: boolean; output: string } {
  const result = spawnSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  return { ok: result.status === 0, output: `${result.stdout ?? ''}${result.stderr ?? ''}`.trim() }
}

export function commandExists(command: string): boolean {
  return runSync('sh', ['-c', `command -v ${command}`]).ok
}

/** Kills whatever `run` still has going: a build interrupted by a signal must not go on. */
export function killRunning(): void {
  for (const child of running) child.kill('SIGKILL')
}

export type Podman = {
  (args: string[], opts?: CommandOptions): Promise<string>
  sync: (args: string[]) => { ok: boolean; output: string }
}

/**
 * podman on a store of the script's own (`root`), so the cached base image and build layers
 * live with the checkout and nothing touches the machine's default store. As root on a
 * kernel with overlayfs, no uidmap or fuse-overlayfs is needed.
 */
export function podmanOn(root: string, runRoot: string): Podman {
  const global = ['--root', root, '--runroot', runRoot, '--events-backend', 'file', '--cgroup-manager', 'cgroupfs']
  const ulimits = buildUlimits()
  const podman = async (args: string[], opts?: CommandOptions): Promise<string> => {
    const command = args[0] === 'build' ? ['build', ...ulimits, ...args.slice(1)] : args
    for (let attempt = 1; ; attempt++) {
      try {
        return await run('podman', [...global, ...command], opts)
      } catch (error) {
        if (attempt >= 3 || !isTransient((error as Error).message)) throw error
        process.stdout.write(
          `# podman ${args[0]}: transient failure, attempt ${attempt + 1} of 3: ${firstTransient((error as Error).message)}\n`,
        )
      }
    }
  }
  podman.sync = (args: string[]) => runSync('podman', [...global, ...args])
  return podman
}

/**
 * buildah's chroot isolation gives each RUN step 1024 open files, soft and hard, whatever this
 * process has: `npm ci` in the relay image's build failed with EMFILE at that once (CI, on a
 * loaded machine). The steps get this process's own hard limit, the most podman may set here.
 */
function buildUlimits(): string[] {
  const hard = /^Max open files\s+\S+\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1]
  return hard === undefined ? [] : ['--ulimit', `nofile=${hard}:${hard}`]
}

/**
 * Failures of buildah's chroot isolation that come from the kernel racing it, not from what is
 * built: it copies itself into a memfd and seals it, and the seal fails with EBUSY while a
 * writable mapping of the copy is still being torn down (seen once in CI on a loaded machine).
 * Running the same step again succeeds; anything else is a real failure and is not retried.
 */
const TRANSIENT = [/sealing memfd copy: Device or resource busy/]

function isTransient(message: string): boolean {
  return TRANSIENT.some((pattern) => pattern.test(message))
}

function firstTransient(message: string): string {
  return TRANSIENT.map((pattern) => pattern.exec(message)?.[0]).find((match) => match !== undefined) ?? ''
}

export type UndoStack = {
  /** Registers an undo step; the last registered runs first. */
  push: (what: string, step: () => void) => void
  /** Runs every step still registered, each once, even when an earlier one fails. */
  unwind: () => string[]
  /**
   * A stack for one part of the work, unwound as a single step of this one: the part unwinds
   * it when done, and a signal that unwinds this one reaches the part's steps too.
   */
  nested: (what: string) => UndoStack
}

export function undoStack(): UndoStack {
  const steps: Array<{ what: string; step: () => void }> = []
  const stack: UndoStack = {
    push: (what, step) => {
      steps.push({ what, step })
    },
    unwind: () => {
      const failures: string[] = []
      for (let next = steps.pop(); next !== undefined; next = steps.pop()) {
        try {
          next.step()
        } catch (error) {
          failures.push(`${next.what}: ${(error as Error).message}`)
        }
      }
      return failures
    },
    nested: (what) => {
      const inner = undoStack()
      stack.push(what, () => {
        const failures = inner.unwind()
        if (failures.length > 0) throw new Error(failures.join('; '))
      })
      return inner
    },
  }
  return stack
}

/** Mount points at or below `dir`, from this process's mount table. */
export function mountsUnder(dir: string): string[] {
  // Fields: id parent major:minor root mountpoint ...; octal escapes for spaces and the like.
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) =>
      (line.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_, octal: string) =>
        String.fromCharCode(parseInt(octal, 8)),
      ),
    )
    .filter((point) => point === dir || point.startsWith(`${dir}/`))
}

/** rm -rf, but never across a mount point: what is mounted there is not ours to delete. */
export function removeDir(dir: string): void {
  const mounted = mountsUnder(dir)
  if (mounted.length > 0) throw new Error(`not removing ${dir}: still mounted there: ${mounted.join(', ')}`)
  rmSync(dir, { recursive: true, force: true })
}

/** Unmounts whatever is mounted at or below `dir`, deepest first (what an interrupted debootstrap leaves). */
export function unmountAllUnder(dir: string): void {
  for (const point of mountsUnder(dir).reverse()) {
    const result = runSync('umount', [point])
    if (!result.ok && !runSync('umount', ['-l', point]).ok) throw new Error(`umount ${point}: ${result.output}`)
  }
}
