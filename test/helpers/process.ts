// A compiled process (relay or control plane) run as an operator runs it, for the process
// tests: its stdout and stderr captured, killed when the test ends.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import type { Test } from 'tap'
import { stopAtTeardown } from './stop-child.js'
import { withTimeout } from './wait.js'

export type Exit = { code: number | null; signal: NodeJS.Signals | null }

export type RunningProcess = {
  child: ChildProcess
  port: number
  /** Every JSON line written to stdout so far, parsed. */
  readonly logs: Array<Record<string, unknown>>
  logText: () => string
  stderr: () => string
  exited: Promise<Exit>
}

export type ProcessSpec = {
  /** The compiled entry point. */
  mainJs: string
  /** Environment variables that would configure the process, dropped from the parent's. */
  ownEnv: RegExp
  /** The log message that carries the port once it listens. */
  listening: string
}

// How long a start (until the listening line) or a run to exit may take before the wait gives up
// and says what it waited for. No contract names a time for either: this is a bound for a hung
// process, not an expectation: at a load average of 14 on two cores a control plane start
// (PGlite) took up to 30 s, a relay start about 1-2 s. Each file's
// timeout (t.setTimeout at its top) counts the starts it does.
const PROCESS_WAIT_MS = 120_000

export function processRunner(spec: ProcessSpec) {
  // The parent's environment minus the process's own settings and tap's runner settings (TAP*).
  // tap's coverage hook (NODE_OPTIONS, _TAPJS_*) stays: the child's coverage counts (stop-child.ts).
  function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {}
    for (const [key, value] of Object.entries(process.env)) {
      if (!spec.ownEnv.test(key) && !/^TAP/.test(key)) env[key] = value
    }
    return { ...env, ...extra }
  }

  function launch(t: Test, args: string[], env: Record<string, string>) {
    if (!existsSync(spec.mainJs))
      throw new Error(`${spec.mainJs} is missing: run "npm run build" first (npm test builds it)`)
    const child = spawn(process.execPath, [spec.mainJs, ...args], {
      env: childEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    // 'close' rather than 'exit': it waits for stdout and stderr to be read to the end.
    const exited = new Promise<Exit>((resolve, reject) => {
      child.once('error', reject)
      child.once('close', (code, signal) => resolve({ code, signal }))
    })
    stopAtTeardown(t, child)
    return { child, out: () => stdout, err: () => stderr, exited }
  }

  async function runToExit(
    t: Test,
    args: string[],
    env: Record<string, string> = {},
  ): Promise<Exit & { stdout: string; stderr: string }> {
    const run = launch(t, args, env)
    const exit = await withTimeout(run.exited, PROCESS_WAIT_MS, `${args.join(' ')} to exit`)
    return { ...exit, stdout: run.out(), stderr: run.err() }
  }

  /** Starts the process and resolves once it has logged the port it listens on. */
  async function start(t: Test, args: string[], env: Record<string, string> = {}): Promise<RunningProcess> {
    const run = launch(t, args, env)
    // Only complete lines: a chunk may end in the middle of one.
    const parsed = (): Array<Record<string, unknown>> =>
      lines(run.out().slice(0, run.out().lastIndexOf('\n') + 1)).map(
        (line) => JSON.parse(line) as Record<string, unknown>,
      )
    const listening = new Promise<number>((resolve, reject) => {
      const check = (): void => {
        const line = parsed().find((entry) => entry.msg === spec.listening)
        if (line !== undefined) resolve(line.port as number)
      }
      run.child.stdout.on('data', check)
      void run.exited.then((exit) =>
        reject(
          new Error(`exited before listening (${JSON.stringify(exit)}); stderr: ${run.err()}; stdout: ${run.out()}`),
        ),
      )
    })
    const port = await withTimeout(listening, PROCESS_WAIT_MS, `the log line "${spec.listening}"`)
    return {
      child: run.child,
      port,
      get logs() {
        return parsed()
      },
      logText: run.out,
      stderr: run.err,
      exited: run.exited,
    }
  }

  return { childEnv, runToExit, start }
}

export function lines(text: string): string[] {
  return text.split('\n').filter((line) => line !== '')
}
