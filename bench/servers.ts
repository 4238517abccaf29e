// Starting the servers under test: each in its own process, on a port the kernel says is free.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'

export type ServerName = 'relay' | 'uws' | 'ws' | 'tcp'
export type RunningServer = { process: ChildProcess; port: number; pid: number }

const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url))

/** The relay runs as in production (see the Dockerfile and `npm run relay`). */
const RELAY_NODE_FLAGS = ['--max-semi-space-size=4']

/**
 * One load generator on one address creates every session: the per-address creation limit and
 * the session cap are lifted, or the benchmarks would measure 429s and 503s.
 */
const RELAY_UNLIMITED = [
  '--session-create-limit',
  'off',
  '--max-sessions',
  '10000000',
  '--max-sessions-per-caller',
  'off',
]

/** How each server starts; `{port}` is replaced by a free port. */
export const SERVERS: Record<ServerName, { label: string; argv: string[] }> = {
  relay: {
    label: 'relay (uWS)',
    argv: [
      ...RELAY_NODE_FLAGS,
      here('../../relay/dist/main.js'),
      '--no-auth',
      '--addr',
      '127.0.0.1:{port}',
      '--log-level',
      'warn',
      ...RELAY_UNLIMITED,
    ],
  },
  // The relay's Node flags too: the ratio to it is then what the relay's code costs.
  uws: { label: 'bare uWS relay', argv: [...RELAY_NODE_FLAGS, here('./baselines/uws-relay.js'), '{port}'] },
  ws: { label: 'ws baseline', argv: [here('./baselines/ws-relay.js'), '{port}'] },
  tcp: { label: 'raw TCP pipe', argv: [here('./baselines/tcp-forwarder.js'), '{port}'] },
}

/** Another build of a server: its entry point and the Node that runs it (an A/B of two commits or runtimes). */
export type Build = { node: string; main: string }

/** `name=NODE:MAIN_JS`, as the benches' `--builds` flags spell a build. */
export function parseBuild(entry: string): { name: string; build: Build } {
  const equals = entry.indexOf('=')
  const colon = entry.indexOf(':', equals)
  if (equals < 1 || colon < 0) throw new Error(`expected name=NODE:MAIN_JS, got ${entry}`)
  return { name: entry.slice(0, equals), build: { node: entry.slice(equals + 1, colon), main: entry.slice(colon + 1) } }
}

export async function startServer(name: ServerName, extraArgs: string[] = [], build?: Build): Promise<RunningServer> {
  const port = await freePort()
  const own = SERVERS[name].argv
  const argv = [
    ...(build === undefined ? own : own.map((arg) => (arg === here(`../../${name}/dist/main.js`) ? build.main : arg))),
    ...extraArgs,
  ].map((arg) => arg.replace('{port}', String(port)))
  const child = spawn(build?.node ?? process.execPath, argv, { stdio: ['ignore', 'ignore', 'inherit'] })
  const deadline = Date.now() + 10_000
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break
    } catch {}
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill()
      throw new Error(`${name} did not start`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return { process: child, port, pid: child.pid as number }
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

export function scriptPath(path: string): string {
  return here(path)
}

export type CreatedSession = { id: string; initiator_token: string; responder_token: string }

/** `count` sessions from a server with auth off, 32 requests at a time. */
export async function createSessions(port: number, count: number): Promise<CreatedSession[]> {
  const sessions: CreatedSession[] = []
  let next = 0
  const worker = async (): Promise<void> => {
    while (next++ < count) {
      const response = await fetch(`http://127.0.0.1:${port}/admin/sessions`, { method: 'POST' })
      if (response.status !== 201) throw new Error(`POST /admin/sessions answered ${response.status}`)
      sessions.push((await response.json()) as CreatedSession)
    }
  }
  await Promise.all(Array.from({ length: 32 }, worker))
  return sessions
}
