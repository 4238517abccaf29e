// The programs the local runtime starts and the tools a build needs on this machine. The
// builder ships beside the control plane (builders/dist), the worker is the project's cargo
// build (or a configured binary); a language whose compiler is missing here is refused before
// a build is queued, naming the tool.
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { UnavailableError } from '@session-relay/common/errors'
import type { LanguageT } from '../model/resources.js'
import { onPath, rustRoot, sandboxProblem, toolchainProblem } from '@session-relay/spin/toolchains'
import type { SandboxInstaller } from './sandbox-tools.js'
import { aptInstaller } from './sandbox-tools.js'
import type { LocalToolchains } from './toolchains.js'

/** `relative` (e.g. builders/dist/main.js) in the checkout or image: control/src and control/dist are both two levels down. */
export function shippedProgram(relative: string): string {
  return join(fileURLToPath(new URL('../../../', import.meta.url)), relative)
}

/** The program `setting` names, else the shipped one; a 503 naming both when neither is there. */
export function programPath(configured: string, relative: string, setting: string): string {
  const path = configured !== '' ? configured : shippedProgram(relative)
  if (!existsSync(path))
    throw new UnavailableError(
      `the local runtime's ${relative.split('/')[0] as string} program is missing at ${path}: run npm run build, or set ${setting}`,
    )
  return path
}

/**
 * The worker binary: `configured`, else the project's cargo build (scripts/build-worker.sh,
 * which npm run build runs) in the checkout's cache. Missing: a 503 naming what to do, and
 * whether this machine has the Rust toolchain that builds it.
 */
export function workerProgram(configured: string, path = process.env.PATH ?? ''): string {
  if (configured !== '') {
    if (!existsSync(configured))
      throw new UnavailableError(`the local runtime's worker is missing at ${configured} (PLATFORM_LOCAL_WORKER)`)
    return configured
  }
  const built = join(fileURLToPath(new URL('../../../', import.meta.url)), WORKER_BUILD)
  if (existsSync(built)) return built
  const cargo = onPath('cargo', path) || existsSync(join(process.env.HOME ?? '/nonexistent', '.cargo', 'bin', 'cargo'))
  throw new UnavailableError(
    cargo
      ? `the local runtime's worker is not built (${built}): run npm run build (scripts/build-worker.sh, 10-15 minutes the first time), or set PLATFORM_LOCAL_WORKER`
      : `the local runtime's worker needs the Rust toolchain: cargo is not on PATH (install Rust 1.95 with rustup, then npm run build), or set PLATFORM_LOCAL_WORKER to a built worker`,
  )
}

const WORKER_BUILD = '.cache/worker/target/release/worker'

/** Why this machine cannot build `language`, or null; asked once per language and remembered. */
export type ToolchainCheck = (language: LanguageT) => Promise<string | null>

/** Whether `name` is installed where this code resolves packages. */
function installed(name: string): boolean {
  try {
    createRequire(import.meta.url).resolve(`${name}/package.json`)
    return true
  } catch {
    return false
  }
}

// The js toolchain is the builder's: the control image leaves it out (its builds run in a
// cluster's Jobs, with the builder images), and the packages the builder resolves say so.
const JS_TOOLCHAIN = ['@spinframework/build-tools', 'esbuild']

export function toolchainCheck(
  path = process.env.PATH ?? '',
  isInstalled: (name: string) => boolean = installed,
  sandboxPath = path,
  installSandbox: SandboxInstaller | null = aptInstaller(sandboxPath),
  toolchains: LocalToolchains | null = null,
): ToolchainCheck {
  const known = new Map<LanguageT, Promise<string | null>>()
  // RUST_ROOT: the same setting the builder reads (builders/src/config.ts), so both find one root.
  // The language's own toolchain first: a machine without it cannot build that language whatever
  // the sandbox (the control image has no js toolchain and no bwrap, and the first is the news).
  const check = (language: LanguageT): string | null => {
    // With `toolchains`, a missing go or rust is prepared by the build (toolchains.ts) when it can be.
    if ((language === 'go' || language === 'rust') && toolchains !== null) return toolchains.problem(language)
    if (language === 'go' || language === 'rust')
      return toolchainProblem(language, { path, rustRoot: rustRoot(process.env.RUST_ROOT ?? '') })
    // js and ts build with Node, which runs this process, and the builder's npm packages.
    const missing = JS_TOOLCHAIN.filter((name) => !isInstalled(name))
    if (missing.length > 0)
      return `${language} builds need the js toolchain: ${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} not installed here (the control image leaves it out; run the control plane from a checkout after npm ci, or build in a cluster)`
    return null
  }
  const answer = async (language: LanguageT): Promise<string | null> => {
    const toolchain = check(language)
    if (toolchain !== null) return toolchain
    const missing = sandboxProblem(sandboxPath)
    if (missing === null) return null
    if (installSandbox === null) return missing
    const failed = await installSandbox()
    if (failed !== null) return `${missing}; installing it with apt failed: ${failed}`
    return sandboxProblem(sandboxPath)
  }
  // Only an answer that the machine can build is kept: one that names something missing is asked
  // again next time, so installing it takes effect without a restart.
  return (language) => {
    const kept = known.get(language)
    if (kept !== undefined) return kept
    return answer(language).then((problem) => {
      if (problem === null) known.set(language, Promise.resolve(null))
      return problem
    })
  }
}
