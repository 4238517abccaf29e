// How to start this same `relay` from any directory, for the commands `relay pair` prints: the
// bare name when PATH finds this installation (npm install -g), else the absolute Node and
// script, because `npx relay` works only inside the checkout (elsewhere npm cannot tell which
// package to run).
import { accessSync, constants, realpathSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'

// dist/cli/launcher.js -> bin/relay.js
const SCRIPT = fileURLToPath(new URL('../../bin/relay.js', import.meta.url))

export function relayLauncher(env: NodeJS.ProcessEnv): string {
  const script = realOrNull(SCRIPT) ?? SCRIPT
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue
    const candidate = join(dir, 'relay')
    if (realOrNull(candidate) === script && executable(candidate)) return 'relay'
  }
  return `${quote(process.execPath)} ${quote(script)}`
}

function realOrNull(path: string): string | null {
  try {
    return realpathSync(path)
  } catch {
    return null
  }
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** A path as one POSIX shell word. */
function quote(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`
}
