// The embedded database's directory is the control plane's alone: started under umask 000 (a
// service manager's default can be anything), every directory under it is 0700 and every file
// has no group or other permission; a directory that others could already read or write is
// repaired at start, and the log says so.
import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { controlProcess, scratchDir } from '../helpers/control-process.js'
import { stopChild } from '../helpers/stop-child.js'

t.setTimeout(120_000)

/** Every path under `dir` (itself included) whose mode grants group or others anything. */
function openToOthers(dir: string): string[] {
  const found: string[] = []
  const visit = (path: string): void => {
    const stat = lstatSync(path)
    if (stat.isSymbolicLink()) return
    if ((stat.mode & 0o077) !== 0) found.push(`${path} ${(stat.mode & 0o777).toString(8)}`)
    if (stat.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name))
  }
  visit(dir)
  return found
}

async function startUnder(t: Test, umask: number, dataDir: string) {
  // The child inherits the umask it is spawned with.
  const previous = process.umask(umask)
  try {
    return await controlProcess.start(t, ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0', '--data-dir', dataDir])
  } finally {
    process.umask(previous)
  }
}

t.test('a fresh data directory under umask 000 is owner-only, files and directories', async (t) => {
  const dataDir = join(scratchDir(t), 'data', 'control')
  const control = await startUnder(t, 0, dataDir)
  t.same(openToOthers(dataDir), [], 'nothing under it is open to others')
  t.equal(lstatSync(dataDir).mode & 0o777, 0o700)
  await stopChild(control.child)
})

t.test('a data directory others can read or write is repaired at start, and the log says so', async (t) => {
  const dataDir = join(scratchDir(t), 'control')
  mkdirSync(dataDir)
  chmodSync(dataDir, 0o777)
  const control = await startUnder(t, 0o022, dataDir)
  t.same(openToOthers(dataDir), [])
  t.ok(
    control.logs.some(
      (line) =>
        line.level === 40 && /was open to other users \(mode 777\): made owner-only \(700\)/.test(String(line.msg)),
    ),
    'a warning names the repair',
  )
  await stopChild(control.child)
})
