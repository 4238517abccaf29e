// The compiled control plane as the process tests run it (test/control/process*.test.ts).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import { processRunner } from './process.js'

const controlMainJs = fileURLToPath(new URL('../../control/dist/main.js', import.meta.url))
export const controlHealthcheckJs = fileURLToPath(new URL('../../control/dist/healthcheck.js', import.meta.url))

export const controlProcess = processRunner({
  mainJs: controlMainJs,
  ownEnv: /^PLATFORM_/,
  listening: 'control plane listening',
})

/** A fresh directory, removed when the test ends. */
export function scratchDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'control-process-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}
