// The processes of the test cluster (etcd, kube-apiserver, kube-controller-manager,
// spin-operator): spawned with their output kept for a failure's message and never printed,
// stopped with SIGTERM (SIGKILL past a bound), and a poll for the starts nothing announces.
import type { ChildProcess } from 'node:child_process'
import { spawn } from 'node:child_process'
import { withTimeout } from './wait.js'

// A bound for a hung start, not an expectation: each starts in seconds on an idle machine.
const START_TIMEOUT_MS = 120_000

type Started = { check: () => void; log: () => string; child: ChildProcess }

/** Spawn with its output kept (the last 64 KiB) for a failure's message, never printed. */
export function startProcess(command: string, args: string[], children: ChildProcess[]): Started {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let output = ''
  const keep = (chunk: string): void => {
    output = (output + chunk).slice(-65536)
  }
  child.stdout?.setEncoding('utf8').on('data', keep)
  child.stderr?.setEncoding('utf8').on('data', keep)
  let failure: Error | null = null
  child.once('error', (error) => {
    failure = error
  })
  child.once('exit', (code, signal) => {
    failure ??= new Error(
      `${command} exited at start (${code ?? signal}): ${output.trim().split('\n').slice(-5).join(' | ')}`,
    )
  })
  return {
    check() {
      if (failure !== null) throw failure
    },
    log: () => output,
    child,
  }
}

/** SIGTERM, then SIGKILL if it has not exited in 15 s. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  await withTimeout(exited, 15_000, 'a kube test process to stop').catch(async () => {
    child.kill('SIGKILL')
    await exited
  })
}

/** Poll `check` until it holds (a start or a CRD, whose readiness nothing announces), within a hung process's bound. */
export async function poll(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS
  for (;;) {
    if (await check()) return
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
