// The builder: one build of one application, as a Job's container or a local child process.
// Contract (builders/README.md): settings from the environment; the build log on stdout and
// stderr; on success the digest-pinned reference in the termination log and exit 0; on
// failure a short reason there and exit 1; exit 2 for settings that do not parse.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, helpRequested, readSettings, usage } from '@session-relay/common/config/settings'
import { BuildFailure, buildApplication } from './build-app.js'
import { buildRequestOf } from './build-request.js'
import type { BuilderConfig } from './config.js'
import { settings } from './config.js'

// Kubernetes keeps at most 4096 bytes of a termination message.
const MAX_TERMINATION_MESSAGE = 4000

async function writeTermination(path: string, message: string): Promise<void> {
  try {
    await writeFile(path, message.slice(0, MAX_TERMINATION_MESSAGE))
  } catch (error) {
    process.stderr.write(`cannot write the termination log ${path}: ${(error as Error).message}\n`)
  }
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2)
  if (helpRequested(argv)) {
    process.stdout.write(usage(settings, 'node builders/dist/main.js'))
    return 0
  }
  let config: BuilderConfig
  try {
    config = readSettings(settings, argv, process.env)
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    process.stderr.write(`${error.message}\n`)
    const terminationLog = process.env.TERMINATION_LOG ?? '/dev/termination-log'
    await writeTermination(terminationLog, `builder misconfigured: ${error.message}`)
    return 2
  }
  const workDir = await mkdtemp(join(tmpdir(), 'spin-build-'))
  const log = (text: string): void => {
    process.stdout.write(text)
  }
  try {
    const pinned = await buildApplication(buildRequestOf(config, workDir, log))
    await writeTermination(config.terminationLog, pinned)
    log(`${pinned}\n`)
    return 0
  } catch (error) {
    const reason = error instanceof BuildFailure ? error.message : `builder error: ${(error as Error).message}`
    process.stderr.write(`build failed: ${reason}\n`)
    await writeTermination(config.terminationLog, reason)
    return 1
  } finally {
    await rm(workDir, { recursive: true, force: true }).catch(() => {})
  }
}

process.exitCode = await main()
