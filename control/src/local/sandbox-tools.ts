// The build sandbox's tools (bubblewrap; prlimit and setpriv come with util-linux), installed on
// first need: a new user's first `wasmkube deploy` on a fresh Debian machine should build rather
// than answer 503 for a package. Only as root and only with apt-get; otherwise the 503 names
// the command to run. One install at a time, and its outcome is not kept: a failed one is tried
// again at the next build.
import { spawn } from 'node:child_process'
import { onPath } from '@session-relay/spin/toolchains'

const INSTALL_TIMEOUT_MS = 5 * 60_000
const PACKAGES = ['bubblewrap', 'util-linux']

/** Installs the sandbox's packages; resolves with null when done, else why not. */
export type SandboxInstaller = () => Promise<string | null>

/** apt-get as root, or null when this process cannot install packages. */
export function aptInstaller(
  path = process.env.PATH ?? '',
  isRoot = process.getuid?.() === 0,
): SandboxInstaller | null {
  if (!isRoot || !onPath('apt-get', path)) return null
  let running: Promise<string | null> | null = null
  return () => {
    running ??= (async () => {
      const first = await apt(['install', '-y', '-q', '--no-install-recommends', ...PACKAGES])
      if (first === null) return null
      // A machine whose package lists were never fetched knows no package yet.
      const update = await apt(['update', '-q'])
      return update ?? (await apt(['install', '-y', '-q', '--no-install-recommends', ...PACKAGES]))
    })().finally(() => {
      running = null
    })
    return running
  }
}

function apt(args: string[]): Promise<string | null> {
  return new Promise((resolve) => {
    const child = spawn('apt-get', args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', DEBIAN_FRONTEND: 'noninteractive' },
    })
    let tail = ''
    child.stderr.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-500)))
    const timer = setTimeout(() => child.kill('SIGKILL'), INSTALL_TIMEOUT_MS)
    child.on('error', (error) => {
      clearTimeout(timer)
      resolve(error.message)
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve(
        code === 0 ? null : `apt-get ${args[0] as string} failed: ${tail.trim().split('\n').pop() ?? `exit ${code}`}`,
      )
    })
  })
}
