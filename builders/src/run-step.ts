// One build step as a child process with a deadline and a cap on what it may print: its
// output goes to the build log (our stdout) as it comes, and the end of it is kept for the
// failure reason.
import { spawn } from 'node:child_process'
import { constants } from 'node:os'

export type Step = {
  /** Shown in the build log. */
  name: string
  command: string
  args: string[]
  cwd: string
  env?: NodeJS.ProcessEnv
  /** How the build log shows the command, when not as run (a sandboxed step shows its own command). */
  shown?: string
  /** RLIMIT_CPU of the step's processes, seconds, when it runs under one: named when one meets it. */
  cpuSeconds?: number
}

export type StepLimits = { timeoutMs: number; maxOutputBytes: number }

export type StepResult = { ok: boolean; reason: string; output: string }

const TAIL_BYTES = 64 * 1024

export function runStep(step: Step, limits: StepLimits, log: (text: string) => void): Promise<StepResult> {
  return new Promise((resolve) => {
    log(`==> ${step.name}: ${step.shown ?? [step.command, ...step.args].join(' ')}\n`)
    const started = Date.now()
    const child = spawn(step.command, step.args, {
      cwd: step.cwd,
      env: step.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    let printed = 0
    let tail = ''
    let stopped: string | null = null
    const stop = (reason: string): void => {
      if (stopped !== null) return
      stopped = reason
      // The whole process group: j2w and cargo start children of their own.
      try {
        process.kill(-(child.pid as number), 'SIGKILL')
      } catch {}
    }
    const timer = setTimeout(() => stop(`${step.name} took longer than ${limits.timeoutMs} ms`), limits.timeoutMs)
    const take = (chunk: Buffer): void => {
      const text = chunk.toString('utf8')
      tail = (tail + text).slice(-TAIL_BYTES)
      printed += chunk.length
      if (printed > limits.maxOutputBytes) return stop(`${step.name} printed more than ${limits.maxOutputBytes} bytes`)
      log(text)
    }
    child.stdout.on('data', take)
    child.stderr.on('data', take)
    child.on('error', (error) => {
      clearTimeout(timer)
      resolve({ ok: false, reason: `${step.name}: cannot run ${step.command}: ${error.message}`, output: tail })
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (stopped !== null) return resolve({ ok: false, reason: stopped, output: tail })
      // Each step's time in the log: where a deploy's seconds go (bench/deploy.ts reads it).
      if (code === 0) {
        log(`<== ${step.name}: ${Date.now() - started} ms\n`)
        return resolve({ ok: true, reason: '', output: tail })
      }
      const cpu =
        step.cpuSeconds !== undefined && outOfCpu(code, signal, tail)
          ? `: a process of the step used its ${step.cpuSeconds} s of CPU time, the build step's limit`
          : ''
      resolve({
        ok: false,
        reason: `${step.name} failed (${code === null ? `signal ${String(signal)}` : `exit ${code}`})${cpu}`,
        output: tail,
      })
    })
  })
}

/**
 * Whether a step failed on RLIMIT_CPU: the kernel's SIGXCPU at the soft limit ended a process.
 * The step's own process (bwrap, which exits 128 + the signal of the command it ran), or a
 * child whose parent says so: cargo prints `SIGXCPU`, go `CPU time limit exceeded`. The output
 * is the step's own, so a step can claim it falsely; it changes only the message.
 */
function outOfCpu(code: number | null, signal: NodeJS.Signals | null, output: string): boolean {
  return (
    signal === 'SIGXCPU' ||
    code === 128 + constants.signals.SIGXCPU ||
    output.includes('SIGXCPU') ||
    output.includes('CPU time limit exceeded')
  )
}
