// The control plane as the compiled binary on its embedded defaults (PGlite, the local runtime,
// auth off), for the benches that measure a whole deploy or invoke through it, and the two
// ways they talk to it: its API, and waiting for a state it reaches.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const mainJs = fileURLToPath(new URL('../../control/dist/main.js', import.meta.url))

export type LocalControlOptions = {
  dataDir: string
  port: number
  logLevel: string
  /** Its stdout: read by the bench (its log lines), or not. */
  stdout: 'pipe' | 'ignore'
  env?: Record<string, string>
}

export function spawnLocalControl(options: LocalControlOptions): ChildProcess {
  return spawn(process.execPath, [mainJs], {
    env: {
      ...process.env,
      PLATFORM_RUNTIME: 'local',
      PLATFORM_DEV_INSECURE_SKIP_AUTH: 'true',
      PLATFORM_DATA_DIR: options.dataDir,
      PLATFORM_ADDR: `127.0.0.1:${options.port}`,
      PLATFORM_LOG_LEVEL: options.logLevel,
      ...options.env,
    },
    stdio: ['ignore', options.stdout, 'inherit'],
  })
}

/** One API call's JSON answer; anything but a 2xx throws with its status and body. */
export async function controlApi(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const response = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? null : JSON.stringify(body),
  })
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`)
  return (await response.json()) as Record<string, unknown>
}

/** `check`'s first value that is not null (a throw counts as null), every `everyMs`, within `timeoutMs`. */
export async function poll<T>(
  what: string,
  timeoutMs: number,
  everyMs: number,
  check: () => Promise<T | null>,
): Promise<T> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const value = await check().catch(() => null)
    if (value !== null) return value
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}
