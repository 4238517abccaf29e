// The `wasmkube` command run in this process, as its main module runs it: argv in, exit code,
// stdout (bytes) and stderr (text) out; the environment is only what the test gives.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import type { Test } from 'tap'
import { run } from '../../wasmkube/src/cli.js'

type Outcome = { code: number; stdout: Buffer; stderr: string; out: string }

export type WasmkubeRunner = {
  (
    args: string[],
    opts?: {
      env?: Record<string, string>
      signal?: AbortSignal
      onStderr?: (text: string) => void
      onStdout?: (text: string) => void
    },
  ): Promise<Outcome>
  /** The XDG_CONFIG_HOME the runs use: logins are stored below it. */
  configHome: string
}

function sink(onText?: (text: string) => void): { stream: Writable; chunks: Buffer[] } {
  const chunks: Buffer[] = []
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk)
      chunks.push(bytes)
      onText?.(Buffer.concat(chunks).toString('utf8'))
      done()
    },
  })
  return { stream, chunks }
}

/** A runner against `server` (none: the default), with a config directory of its own. */
export function wasmkube(t: Test, env: Record<string, string> = {}): WasmkubeRunner {
  const configHome = mkdtempSync(join(tmpdir(), 'wasmkube-test-'))
  t.teardown(() => rmSync(configHome, { recursive: true, force: true }))
  const runner = async (
    args: string[],
    opts: {
      env?: Record<string, string>
      signal?: AbortSignal
      onStderr?: (text: string) => void
      onStdout?: (text: string) => void
    } = {},
  ): Promise<Outcome> => {
    const out = sink(opts.onStdout)
    const err = sink(opts.onStderr)
    const code = await run(args, {
      stdout: out.stream,
      stderr: err.stream,
      env: { XDG_CONFIG_HOME: configHome, ...env, ...opts.env },
      ...(opts.signal === undefined ? {} : { signal: opts.signal }),
    })
    const stdout = Buffer.concat(out.chunks)
    return { code, stdout, stderr: Buffer.concat(err.chunks).toString('utf8'), out: stdout.toString('utf8') }
  }
  return Object.assign(runner, { configHome })
}
