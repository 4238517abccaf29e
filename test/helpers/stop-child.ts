// Stopping the child processes a test started, so that they report what they ran.
//
// Under tap every node child carries @tapjs/processinfo (tap re-adds its NODE_OPTIONS to each
// spawn, whatever `env` the spawn gives), and that hook writes the child's coverage from an
// exit handler (signal-exit): on a normal exit and on SIGTERM, never on SIGKILL. A child killed
// with SIGKILL at teardown counts as never having run a line, which is how the old Node host, the
// builder and `relay attach` once looked uncovered although the tests took their branches.
import type { ChildProcess } from 'node:child_process'
import type { Test } from 'tap'

// How long a child may take to exit after SIGTERM before it is killed. No contract names a time
// here; it only bounds a teardown on a loaded machine (a stop takes milliseconds when idle).
const STOP_GRACE_MS = 15_000

function running(child: ChildProcess): boolean {
  return child.pid !== undefined && child.exitCode === null && child.signalCode === null
}

/** SIGTERM, then SIGKILL if it has not exited within the grace; resolves once it has exited. */
export async function stopChild(child: ChildProcess, graceMs = STOP_GRACE_MS): Promise<void> {
  if (!running(child)) return
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve())
  })
  child.kill('SIGTERM')
  const timer = setTimeout(() => {
    if (running(child)) child.kill('SIGKILL')
  }, graceMs)
  await exited
  clearTimeout(timer)
}

/** Stops the child when the test ends (see stopChild). */
export function stopAtTeardown(t: Test, child: ChildProcess): void {
  t.teardown(() => stopChild(child))
}
