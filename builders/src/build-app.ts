// A whole build: unpack the archive the control plane packed (spin.toml + functions/{name}/...)
// into a fresh directory, build every component, assemble the locked application from the
// manifest and push it. Returns the digest-pinned reference; throws a BuildFailure whose
// message is the short reason for the termination log.
import { createRequire } from 'node:module'
import { constants, createReadStream } from 'node:fs'
import { access, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { unpackArchive } from '@session-relay/spin/source/archive'
import { pushSpinApp } from '@session-relay/spin/artifact'
import type { ArtifactRef } from '@session-relay/spin/ref'
import { pinnedRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import type { BuildStep, DependencyDirs, Language, Toolchain } from './languages.js'
import { buildSteps, COMPONENT_FILE, rustArtifact } from './languages.js'
import { ADAPTER_PATH } from '@session-relay/spin/toolchains'
import type { StepLimits, StepResult } from './run-step.js'
import { runStep } from './run-step.js'
import type { SandboxLimits } from './sandbox/bwrap.js'
import { ownForSandbox, prepareSandbox } from './sandbox/context.js'
import { startFetchProxy } from './sandbox/fetch-proxy.js'
import type { SandboxContext, SandboxMode } from './sandbox/policy.js'
import { confine } from './sandbox/policy.js'
import { BuildFailure } from './failure.js'
import { checkPackageJson, findEntry } from './js-package.js'
import type { PreinitBinds } from './js-preinit.js'
import { preinitBinds } from './js-preinit.js'
import type { ComponentVariables } from './locked-app.js'
import { declaredVariables, lockedAppOf } from './locked-app.js'
import { buildableFiles } from './source-files.js'
import type { SpinManifest } from './spin-toml.js'
import { parseSpinToml } from './spin-toml.js'

export { BuildFailure } from './failure.js'

export type BuildRequest = {
  archive: string
  ref: ArtifactRef
  language: Language
  application: string
  buildId: string
  dockerConfigDir: string | null
  insecureRegistry: boolean
  workDir: string
  /** go and rust: the application's dependency cache (modules, crates, compiled output), kept between its builds; else one inside workDir. */
  dependencyCache: string
  /** rust: the toolchain root (toolchains.ts); '/' when the builder's own root is it. */
  rustRoot: string
  /** js, ts in bwrap: the pre-initializer run in place of componentize-js's wizer, with its adapter (js-preinit.ts); null: neither. */
  preinitializer: string | null
  limits: StepLimits
  /** bwrap: every step in its own sandbox (the local runtime); pod: the builder image's pod is the sandbox. */
  sandbox: SandboxMode
  sandboxLimits: SandboxLimits
  log: (text: string) => void
}

// The archive came through a Kubernetes Secret (at most 1 MiB); the unpacked limits are the
// control plane's own source limits with room for spin.toml.
const ARCHIVE_LIMITS = { maxArchiveBytes: 2 * 1024 * 1024, maxFiles: 4096, maxBytes: 64 * 1024 * 1024 }
const require = createRequire(import.meta.url)

/** The builder's package directory: dist/ and package.json. */
function builderDir(): string {
  return dirname(dirname(fileURLToPath(import.meta.url)))
}

/** @spinframework/build-tools' package directory. */
export function buildToolsDir(): string {
  return dirname(require.resolve('@spinframework/build-tools/package.json'))
}

function toolchain(): Toolchain {
  const buildTools = buildToolsDir()
  return {
    node: process.execPath,
    bundleScript: join(dirname(fileURLToPath(import.meta.url)), 'js-bundle.js'),
    j2w: join(buildTools, 'dist', 'index.js'),
  }
}

/** The node_modules directory the builder's own packages live in. */
function builderNodeModules(): string {
  return dirname(dirname(dirname(require.resolve('@spinframework/build-tools/package.json'))))
}

export async function buildApplication(request: BuildRequest): Promise<string> {
  const { log } = request
  const started = Date.now()
  let files: Record<string, string>
  // Opened first: a stream that cannot open reaches unpackArchive as "the upload broke off",
  // the control plane's words for a client that went away, which a builder has none of.
  try {
    await access(request.archive, constants.R_OK)
  } catch (error) {
    throw new BuildFailure(`cannot read the source archive: ${(error as Error).message}`)
  }
  try {
    files = await unpackArchive(createReadStream(request.archive), ARCHIVE_LIMITS)
  } catch (error) {
    throw new BuildFailure(`cannot read the source archive: ${(error as Error).message}`)
  }
  const { kept, ignored } = buildableFiles(files)
  for (const line of ignored) log(`${line}\n`)
  files = kept
  for (const [path, content] of Object.entries(files)) {
    const target = join(request.workDir, path)
    await mkdir(dirname(target), { recursive: true })
    await writeFile(target, content)
  }
  if (files['spin.toml'] === undefined) throw new BuildFailure('the source archive has no spin.toml')
  let manifest: SpinManifest
  let declared: ComponentVariables
  try {
    manifest = parseSpinToml(files['spin.toml'])
    declared = declaredVariables(manifest, files)
  } catch (error) {
    throw new BuildFailure((error as Error).message)
  }
  if (manifest.components.length === 0) throw new BuildFailure('the application has no functions')
  log(
    `building ${request.application} (${request.language}, build ${request.buildId}): ${manifest.components.length} function(s)\n`,
  )
  if (request.language === 'js' || request.language === 'ts') {
    await symlink(builderNodeModules(), join(request.workDir, 'node_modules'), 'dir')
  }
  const wasm = new Map<string, Uint8Array>()
  const preinit = await preinitializer(request)
  try {
    const sandbox = await prepareSandbox({
      mode: request.sandbox,
      language: request.language,
      workDir: request.workDir,
      cache: request.dependencyCache,
      rustRoot: request.rustRoot,
      builderDir: builderDir(),
      nodeModules: request.language === 'js' || request.language === 'ts' ? builderNodeModules() : null,
      preinit: preinit?.binds ?? [],
      limits: request.sandboxLimits,
    })
    try {
      for (const component of manifest.components) {
        const workdir = component.workdir ?? dirname(component.source)
        const dir = join(request.workDir, workdir)
        await buildComponent(request, sandbox, component.id, dir, `${workdir}/`)
        wasm.set(component.id, await readFile(join(dir, COMPONENT_FILE)))
      }
    } finally {
      await sandbox.dispose()
    }
  } finally {
    await preinit?.dispose()
  }
  log(`built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
  const pushStarted = Date.now()
  const lockedApp = lockedAppOf(manifest, declared)
  try {
    const store = await openStore(request.ref, {
      dockerConfigDir: request.dockerConfigDir,
      insecure: request.insecureRegistry,
    })
    const tag = request.ref.tag ?? request.buildId
    const result = await pushSpinApp(store, tag, { lockedApp, wasm })
    const pinned = pinnedRef(request.ref, result.digest)
    log(`pushed ${pinned} (${result.pushedBlobs} new blob(s)) in ${((Date.now() - pushStarted) / 1000).toFixed(1)} s\n`)
    return pinned
  } catch (error) {
    throw new BuildFailure(`push failed: ${(error as Error).message}`)
  }
}

async function buildComponent(
  request: BuildRequest,
  sandbox: SandboxContext,
  name: string,
  dir: string,
  displayPrefix: string,
): Promise<void> {
  const language = request.language
  let entry = ''
  if (language === 'js' || language === 'ts') {
    entry = await findEntry(language, dir, displayPrefix)
    await checkPackageJson(dir, displayPrefix, builderNodeModules())
  }
  const deps = dependencyDirs(request)
  const steps = buildSteps(language, dir, { toolchain: entry === '' ? null : toolchain(), entry, displayPrefix, deps })
  await ownForSandbox(sandbox, dir, [
    ...new Set(steps.flatMap((step) => [...step.needs.writesCache, ...step.needs.readsCache])),
  ])
  if (language === 'rust') await forgetCargoConfiguration(request.dependencyCache)
  for (const step of steps) {
    const result = await runConfined(step, request, sandbox)
    if (!result.ok)
      throw new BuildFailure(`function ${name}: ${firstError(result.output, displayPrefix) ?? result.reason}`)
  }
  if (language === 'rust') {
    let module: string
    try {
      module = join(request.dependencyCache, 'target', rustArtifact(await readFile(join(dir, 'Cargo.toml'), 'utf8')))
    } catch (error) {
      throw new BuildFailure(`function ${name}: ${(error as Error).message}`)
    }
    request.log(`==> componentize: ${module} with the WASI preview 1 adapter\n`)
    const started = Date.now()
    try {
      // Loaded here: only the rust image carries jco-transpile (wasm-tools).
      const { componentize } = await import('./componentize.js')
      await componentize(module, join(request.rustRoot, ADAPTER_PATH), join(dir, COMPONENT_FILE))
      request.log(`<== componentize: ${Date.now() - started} ms\n`)
    } catch (error) {
      throw new BuildFailure(`function ${name}: componentize: ${(error as Error).message}`)
    }
  }
  try {
    await access(join(dir, COMPONENT_FILE))
  } catch {
    throw new BuildFailure(`function ${name}: the build left no ${COMPONENT_FILE}`)
  }
}

async function preinitializer(request: BuildRequest): Promise<PreinitBinds | null> {
  if (request.preinitializer === null || (request.language !== 'js' && request.language !== 'ts')) return null
  if (request.sandbox !== 'bwrap') throw new BuildFailure('a js pre-initializer runs only in the bwrap sandbox')
  try {
    return await preinitBinds(request.preinitializer, buildToolsDir())
  } catch (error) {
    throw new BuildFailure((error as Error).message)
  }
}

// Where a step finds the application's cache: the directory itself, or in the rust toolchain
// root the /cargo and /target the sandbox binds it at.
function dependencyDirs(request: BuildRequest): DependencyDirs {
  const inRoot = request.language === 'rust' && request.sandbox === 'bwrap'
  return { cache: inRoot ? '/' : request.dependencyCache, path: process.env.PATH ?? '/usr/bin:/bin' }
}

// cargo reads its home's configuration before anything else; a build before the cargo home was
// read-only to the compile may have left one there for the fetch, which has the network.
async function forgetCargoConfiguration(cache: string): Promise<void> {
  for (const file of ['config', 'config.toml', 'credentials', 'credentials.toml'])
    await rm(join(cache, 'cargo', file), { force: true, recursive: true })
}

/** One step in its sandbox; a fetch step with the fetch proxy running for its length. */
async function runConfined(step: BuildStep, request: BuildRequest, sandbox: SandboxContext): Promise<StepResult> {
  const confined = confine(step, request.language, sandbox)
  if (sandbox.mode === 'pod' || step.needs.fetchFrom.length === 0) return runStep(confined, request.limits, request.log)
  const proxy = await startFetchProxy({
    socket: sandbox.proxySocket,
    hosts: step.needs.fetchFrom,
    log: (line) => request.log(`${line}\n`),
  })
  try {
    return await runStep(confined, request.limits, request.log)
  } finally {
    await proxy.close()
  }
}

/**
 * The first `file:line:column: error...` line of a step's output, the reason a user needs; a
 * plain `file:line:column: ...` line (Go's errors) when no line says error, never a warning.
 * Paths the compiler printed relative to the function's directory (`./main.go`, `src/lib.rs`)
 * are given the `displayPrefix` (functions/{name}/), so they name the file the user wrote.
 */
export function firstError(output: string, displayPrefix = ''): string | null {
  const lines = output.split('\n')
  const line =
    lines.find((candidate) => /^\S+:\d+:\d+: error(\[\w+\])?: /.test(candidate)) ??
    lines.find(
      (candidate) => /^\S+:\d+:\d+: /.test(candidate) && !/^\S+:\d+:\d+: (warning|note|help)\b/.test(candidate),
    )
  if (line === undefined) return null
  const named =
    displayPrefix !== '' && !line.startsWith('/') && !line.startsWith(displayPrefix)
      ? displayPrefix + line.replace(/^\.\//, '')
      : line
  return named.slice(0, 500)
}
