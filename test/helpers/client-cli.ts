// The compiled `relay` command (client/dist/cli/main.js) run as a user runs it, for the
// client's tests: stdout and stderr captured, its peak memory sampled, killed when the test ends.
import { spawn } from 'node:child_process'
import type { ChildProcessByStdio } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import type { Readable, Writable } from 'node:stream'
import type { Test } from 'tap'
import { stopChild } from './stop-child.js'

const CLI_MAIN = new URL('../../client/dist/cli/main.js', import.meta.url).pathname

export type Cli = {
  child: ChildProcessByStdio<Writable, Readable, Readable>
  stderr: () => string
  /** Resolves with the exit code once the process ended and its output was read. */
  exited: Promise<number | null>
  /** Largest resident set seen so far (VmHWM), bytes. */
  peakRss: () => number
}

export function runCli(t: Test, args: string[], env: Record<string, string> = {}): Cli {
  if (!existsSync(CLI_MAIN)) throw new Error(`${CLI_MAIN} is missing: run "npm run build" first (npm test builds it)`)
  const base: NodeJS.ProcessEnv = {}
  // Not tap's runner settings (TAP*) nor the relay's: tap's coverage hook (NODE_OPTIONS, _TAPJS_*) stays
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(TAP|RELAY_)/.test(key)) base[key] = value
  }
  const child = spawn(process.execPath, [CLI_MAIN, ...args], {
    env: { ...base, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  let peak = 0
  const sample = () => {
    try {
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))
      if (hwm !== null) peak = Math.max(peak, Number(hwm[1]) * 1024)
    } catch {}
  }
  const sampler = setInterval(sample, 100)
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => {
      clearInterval(sampler)
      resolve(code)
    })
  })
  t.teardown(() => {
    clearInterval(sampler)
    return stopChild(child)
  })
  return {
    child,
    stderr: () => stderr,
    exited,
    peakRss: () => {
      sample()
      return peak
    },
  }
}

/** All of a stream's bytes. */
export async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}
