// The worker maps the compiled components in this directory and runs them as native code
// (worker/src/cache.rs), so a directory another user owns or may write to would hand that user
// code in the worker. Made owner-only when missing; otherwise checked here, at start, so the
// refusal names the setting and stops the control plane (exit 2) rather than a worker that
// refuses it again at each restart.
import { mkdirSync, statSync } from 'node:fs'
import { ConfigError } from '@session-relay/common/config/settings'

/** Makes `dir` (0700) unless it exists; throws a ConfigError naming `setting` when it is not ours alone to write. */
export function prepareCompiledDir(dir: string, setting: string): void {
  const refuse = (why: string): never => {
    throw new ConfigError(`${setting} ${dir}: ${why}`)
  }
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
  } catch (error) {
    refuse(`cannot create it: ${(error as Error).message}`)
  }
  const stat = statSync(dir)
  if (!stat.isDirectory()) refuse('not a directory')
  const uid = process.geteuid?.() ?? stat.uid
  if (stat.uid !== uid) refuse(`owned by uid ${stat.uid}, not by uid ${uid} that runs the worker`)
  const mode = stat.mode & 0o7777
  if ((mode & 0o022) !== 0) refuse(`mode ${mode.toString(8)} lets other users write to it (chmod go-w, or 700)`)
}
