// `npm run test:images`: proves that Dockerfile.relay, Dockerfile.control and
// builders/Dockerfile.{js,go,rust} build and run. Arguments pick some of them (`npm run
// test:images -- builder-js builder-rust`); none runs them all.
//
// 1. Installs podman and debootstrap with apt when they are missing (this needs root).
// 2. Makes (or finds cached) a local stand-in for node:24-trixie-slim (image-base.ts).
// 3. Builds both images with `podman build --isolation=chroot` on that base.
// 4. Runs each image's entrypoint in its own read-only root as its USER (image-root.ts) and
//    checks it from outside: /healthz, the image's HEALTHCHECK, a session round trip through
//    the relay, the control plane on embedded PGlite in its volume and the worker it carries
//    (its Rust stage replaced by the checkout's build: no Rust image here), a clean exit on SIGTERM,
//    the uid it really runs as, and what the image holds: no dev dependencies, tests, sources,
//    benchmarks or scripts.
// 5. Runs the relay's test files inside the relay image's root on its Node 24 (the checkout
//    bound into it), so every change is tested on both supported runtimes: Node 22 in
//    `npm test`, Node 24 here. And runs the relay on this host with the image's Node 24: on a
//    glibc older than 2.38 (Debian 12) it must refuse with exit 2 and one line naming it.
//
// 6. Runs the js builder image's entrypoint on the template's source, pushing to a registry on
//    loopback, and checks what it pushed as the shim would (image-builder.ts); the same for the
//    go and rust builder images, served by the wasmtime worker (image-builder-compiled.ts).
//
// Prints one line per check and ends with "N passed, M failed"; exits 1 on any failure.
// Every mount and process it made is undone on every exit path, signals included.
import { mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { ensureBaseImage } from './image-base.js'
import { testBuilderImage } from './image-builder.js'
import { testCompiledBuilderImage } from './image-builder-compiled.js'
import { commandExists, killRunning, podmanOn, removeDir, run, undoStack } from './image-host.js'
import { cacheDir, repo } from './image-paths.js'
import { check, failed, log, passed, timed } from './image-report.js'
import { freePort, withTimeout } from './image-running.js'
import { IMAGES, testImage } from './image-smoke.js'

async function ensureTools(): Promise<void> {
  const missing = [
    ['podman', 'podman'],
    ['debootstrap', 'debootstrap'],
  ]
    .filter(([command]) => !commandExists(command!))
    .map(([, pkg]) => pkg!)
  if (missing.length === 0) return
  log(`installing ${missing.join(', ')} with apt`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  const logFile = join(cacheDir, 'logs', 'apt.log')
  // Others may hold apt's lock for a while (CI installs more than this).
  const lock = ['-o', 'DPkg::Lock::Timeout=600']
  await run('apt-get', [...lock, 'update', '-qq'], { env, logFile })
  await run('apt-get', [...lock, 'install', '-y', '-qq', ...missing], { env, logFile })
}

async function main(): Promise<number> {
  if (process.getuid?.() !== 0) {
    console.error('test:images: needs root (apt, mounts, chroot); CI runs as root')
    return 2
  }
  const started = Date.now()
  mkdirSync(join(cacheDir, 'logs'), { recursive: true })
  const workDir = mkdtempSync(join(tmpdir(), 'test-images-'))
  const undo = undoStack()
  undo.push(`rm ${workDir}`, () => removeDir(workDir))
  const interrupt = (signal: NodeJS.Signals): void => {
    log(`${signal}: cleaning up`)
    killRunning()
    cleanupFailures.push(...undo.unwind())
    process.exit(signal === 'SIGINT' ? 130 : 143)
  }
  const cleanupFailures: string[] = []
  process.once('SIGINT', interrupt)
  process.once('SIGTERM', interrupt)
  try {
    await timed('tools', ensureTools)
    const podman = podmanOn(join(cacheDir, 'storage'), join(cacheDir, 'run'))
    const baseImage = await timed('base image', () => ensureBaseImage(podman, cacheDir, workDir, undo, log))
    const chosen = process.argv.slice(2)
    const builders = ['builder-js', 'builder-go', 'builder-rust']
    const unknown = chosen.filter((name) => !builders.includes(name) && !IMAGES.some((spec) => spec.name === name))
    if (unknown.length > 0)
      throw new Error(
        `unknown image ${unknown.join(', ')}: expected ${[...IMAGES.map((spec) => spec.name), ...builders].join(', ')}`,
      )
    const wanted = (name: string): boolean => chosen.length === 0 || chosen.includes(name)
    for (const spec of IMAGES.filter((spec) => wanted(spec.name))) {
      try {
        await testImage(spec, podman, baseImage, workDir, undo)
      } catch (error) {
        check(false, `${spec.name}: ${(error as Error).message}`)
      }
    }
    if (wanted('builder-js')) {
      try {
        await testBuilderImage(
          { repo, cacheDir, podman, baseImage, workDir, check, log, timed, freePort, withTimeout },
          undo,
        )
      } catch (error) {
        check(false, `builder-js: ${(error as Error).message}`)
      }
    }
    for (const language of ['go', 'rust'] as const) {
      if (!wanted(`builder-${language}`)) continue
      try {
        await testCompiledBuilderImage(
          language,
          { repo, cacheDir, podman, baseImage, workDir, check, log, timed, freePort, withTimeout },
          undo,
        )
      } catch (error) {
        check(false, `builder-${language}: ${(error as Error).message}`)
      }
    }
  } catch (error) {
    check(false, (error as Error).message)
  } finally {
    cleanupFailures.push(...undo.unwind())
  }
  for (const failure of cleanupFailures) check(false, `cleanup: ${failure}`)
  log(`total: ${((Date.now() - started) / 1000).toFixed(1)} s; cache in ${relative(repo, cacheDir)}`)
  console.log(`${passed} passed, ${failed} failed`)
  return failed === 0 && passed > 0 ? 0 : 1
}

process.exitCode = await main()
