// The builder as the control plane and the local runtime run it: a compiled program in a child
// process, configured by its documented environment.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import { packArchive } from '@session-relay/spin/source/archive'
import { spinManifest } from '@session-relay/spin/manifest'
import type { LanguageT } from '@session-relay/control/model/resources'
import { stopAtTeardown } from './stop-child.js'

const root = fileURLToPath(new URL('../../', import.meta.url))
export const BUILDER = join(root, 'builders/dist/main.js')

// The parent's environment without tap's runner settings (TAP*), the registry credentials and
// the control plane's own settings. tap's coverage hook (NODE_OPTIONS, _TAPJS_*) stays.
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^TAP|^DOCKER_CONFIG$|^PLATFORM_/.test(key)) env[key] = value
  }
  return { ...env, ...extra }
}

function compiled(path: string): string {
  if (!existsSync(path)) throw new Error(`${path} is missing: run "npm run build" first (npm test builds it)`)
  return path
}

/** The archive the control plane would pack for an application of these functions. */
export async function sourceArchive(
  t: Test,
  app: { name: string; language: LanguageT },
  functions: Array<{ name: string; route: string; files: Record<string, string> }>,
): Promise<string> {
  const files: Record<string, string> = { 'spin.toml': spinManifest(app, functions) }
  for (const fn of functions) {
    for (const [path, content] of Object.entries(fn.files)) files[`functions/${fn.name}/${path}`] = content
  }
  const dir = await mkdtemp(join(tmpdir(), 'build-source-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const archive = join(dir, 'source.tar.gz')
  await writeFile(archive, await packArchive(files, new Date(0)))
  return archive
}

export type BuilderRun = { code: number | null; log: string; termination: string; ms: number }

export async function runBuilder(t: Test, env: Record<string, string>): Promise<BuilderRun> {
  const dir = await mkdtemp(join(tmpdir(), 'builder-run-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const terminationLog = join(dir, 'termination-log')
  const started = Date.now()
  const child = spawn(process.execPath, [compiled(BUILDER)], {
    env: childEnv({ TERMINATION_LOG: terminationLog, ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  stopAtTeardown(t, child)
  let log = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    log += chunk
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    log += chunk
  })
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (exitCode) => resolve(exitCode))
  })
  const termination = existsSync(terminationLog) ? await readFile(terminationLog, 'utf8') : ''
  return { code, log, termination, ms: Date.now() - started }
}
