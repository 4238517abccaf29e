// A control plane killed outright leaves its worker running, holding its applications' ports.
// The next one stops it by the pid files in the worker's directory, checking first that the
// process is a worker of the same compiled directory: the pid may have been reused meanwhile.
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Logger } from '../../logger.js'

/** Stops (SIGKILL, the whole group) every worker the pid files in `dir` name; the files go. */
export function reapOrphans(dir: string, cacheDir: string, logger: Logger): void {
  let files: string[]
  try {
    files = readdirSync(dir).filter((file) => file.endsWith('.pid'))
  } catch {
    return
  }
  for (const file of files) {
    const pid = Number(readFileSync(join(dir, file), 'utf8').trim())
    rmSync(join(dir, file), { force: true })
    let cmdline = ''
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    } catch {
      continue
    }
    if (!Number.isInteger(pid) || pid <= 1 || !cmdline.includes(`--cache-dir\0${cacheDir}\0`)) continue
    try {
      process.kill(-pid, 'SIGKILL')
      logger.warn({ pid }, 'stopped a worker a previous control plane left running')
    } catch {
      // Gone meanwhile.
    }
  }
}
