// npm run bench:deploy -- [--languages js,ts,go,rust] [--worker PATH] [--baseline-first true|false]
//   [--toolchains-dir DIR] [--preinit true|false] [--settle] [--json]
//
// Source to answer (issue 43): the control plane as the compiled binary on its embedded
// defaults (PGlite, the local runtime, the real builder in its sandbox, the real worker), a fresh
// data directory, so the worker's caches start empty. Per language one application: its first
// deploy (the template's source PUT, built, the first 200 at its own URL with the template's
// text), then its second (the same source with one word changed: the text it answers), each
// taken apart by deploy-run.ts. go and rust builds use the bench's dependency caches
// (.cache/bench-{go,rust}-deps, as bench:build-sandbox): a new application's very first go or
// rust build compiles Go's standard library or the Spin SDK's crates first (README).
// --worker runs another worker binary (PLATFORM_LOCAL_WORKER): the "before" column (with
// --baseline-first false for a worker older than that flag). --baseline-first false: the worker
// compiles each build with Cranelift before it answers (PLATFORM_LOCAL_BASELINE_FIRST).
// --toolchains-dir (PLATFORM_LOCAL_TOOLCHAINS_DIR) keeps the Go toolchain and the rust root
// between runs. Empty: the fresh data directory's.
// --preinit false: js builds run componentize-js's own wizer, not the worker's preinit (the
// worker is run through a directory of its own, with no preinit beside it): the "before".
// --settle: the second deploy waits for the worker to have moved the first build to Cranelift's
// code (a person edits for longer than that compile); without it, it starts at once, beside
// the compile in the background.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { templateFiles } from '@session-relay/spin/templates'
import type { CompileLog, Phases } from './deploy-run.js'
import { deployOnce } from './deploy-run.js'
import { controlApi, spawnLocalControl } from './local-control.js'
import { freePort } from './servers.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const argv = process.argv.slice(2)
const option = (name: string, fallback: string): string =>
  argv.includes(name) ? (argv[argv.indexOf(name) + 1] ?? fallback) : fallback
const languages = option('--languages', 'js,ts,go,rust').split(',') as Array<'js' | 'ts' | 'go' | 'rust'>
const worker = option('--worker', '')
const baselineFirst = option('--baseline-first', 'true')
const toolchainsDir = option('--toolchains-dir', '')
const asJson = argv.includes('--json')
const settle = argv.includes('--settle')
const preinit = option('--preinit', 'true') !== 'false'
const TIMEOUT_MS = 900_000

const dataDir = mkdtempSync(join(tmpdir(), 'bench-deploy-'))
// The local runtime runs the preinit it finds beside the worker (control/src/local/local.ts).
const workerPath = (): string => {
  const path = worker !== '' ? worker : join(ROOT, '.cache/worker/target/release/worker')
  if (preinit) return path
  const alone = join(dataDir, 'worker-alone')
  mkdirSync(alone)
  symlinkSync(path, join(alone, 'worker'))
  return join(alone, 'worker')
}
const port = await freePort()
const base = `http://127.0.0.1:${port}`
const spawned = performance.now()
const control = spawnLocalControl({
  dataDir,
  port,
  // The worker's lines reach the control plane's log at debug: its compile times.
  logLevel: 'debug',
  stdout: 'pipe',
  env: {
    PLATFORM_LOCAL_BASELINE_FIRST: baselineFirst,
    ...(worker === '' && preinit ? {} : { PLATFORM_LOCAL_WORKER: workerPath() }),
    ...(toolchainsDir === '' ? {} : { PLATFORM_LOCAL_TOOLCHAINS_DIR: toolchainsDir }),
  },
})
const compiles: CompileLog = []
// When the worker moved an application to Cranelift's code (`--settle` waits for one).
let optimized = 0
let onOptimized = (): void => {}
createInterface({ input: control.stdout! }).on('line', (line) => {
  try {
    const parsed = JSON.parse(line) as { msg?: string; worker?: { msg?: string; ms?: number; compiler?: string } }
    if (parsed.worker?.msg === "application on Cranelift's code") {
      optimized++
      onOptimized()
    }
    if (parsed.worker?.msg === 'component compiled' && typeof parsed.worker.ms === 'number')
      // A worker older than --baseline-first names no compiler: Cranelift was its only one.
      compiles.push({ at: performance.now(), ms: parsed.worker.ms, compiler: parsed.worker.compiler ?? 'cranelift' })
  } catch {}
})

type Row = { language: string; deploy: 'first' | 'second'; phases: Phases }
// When the control plane first answered, ms after it was spawned.
let startedMs = 0
const rows: Row[] = []
const load = loadavg().map((l) => l.toFixed(2))
try {
  for (let tries = 0; ; tries++) {
    const up = await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false,
    )
    if (up) break
    if (tries > 600) throw new Error('the control plane did not start')
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  startedMs = performance.now() - spawned
  for (const language of languages) {
    const name = `bench-${language}`
    const app = await controlApi(base, 'POST', '/applications', { name, language, runtime: 'wasmkube' })
    const fn = (app.functions as Array<{ id: string; name: string }>)[0] as { id: string; name: string }
    if (language === 'go' || language === 'rust') {
      const cache = join(ROOT, '.cache', `bench-${language}-deps`)
      mkdirSync(cache, { recursive: true })
      const dependencies = join(dataDir, 'runtime', 'dependencies')
      mkdirSync(dependencies, { recursive: true })
      symlinkSync(cache, join(dependencies, name))
    }
    const target = { base, appId: String(app.id), fnId: fn.id }
    const files = templateFiles(language, fn.name)
    const changed = Object.fromEntries(
      Object.entries(files).map(([path, text]) => [path, text.replaceAll(`from ${fn.name}`, `again from ${fn.name}`)]),
    )
    const before = optimized
    rows.push({
      language,
      deploy: 'first',
      phases: await deployOnce(target, files, `from ${fn.name}`, compiles, TIMEOUT_MS),
    })
    if (settle && baselineFirst === 'true') {
      // Bounded: a build the worker found compiled already never ran on Winch's code.
      let giveUp: NodeJS.Timeout | undefined
      await new Promise<void>((resolve) => {
        giveUp = setTimeout(resolve, 180_000)
        onOptimized = () => {
          if (optimized > before) resolve()
        }
        onOptimized()
      })
      clearTimeout(giveUp)
    }
    rows.push({
      language,
      deploy: 'second',
      phases: await deployOnce(target, changed, `again from ${fn.name}`, compiles, TIMEOUT_MS),
    })
  }
} finally {
  control.kill('SIGTERM')
  await new Promise((resolve) => control.once('close', resolve))
  if (process.env.BENCH_KEEP === undefined) rmSync(dataDir, { recursive: true, force: true })
}

const s = (ms: number): string => (ms / 1000).toFixed(1)
if (asJson) {
  process.stdout.write(
    `${JSON.stringify({ loadBefore: load, loadAfter: loadavg(), worker, baselineFirst, settle, preinit, startedMs, rows }, null, 2)}\n`,
  )
} else {
  process.stdout.write(
    `load average before ${load.join(' ')}, after ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  )
  process.stdout.write(
    `js pre-initializer: ${preinit ? "the worker's preinit" : "componentize-js's wizer"}; the control plane answered ${s(startedMs)} s after it was spawned\n`,
  )
  process.stdout.write(
    '| language | deploy | total s | put | queue | build steps | push | build end | compile before the answer (worker) | to first 200 |\n|---|---|---:|---:|---:|---|---:|---:|---:|---:|\n',
  )
  for (const { language, deploy, phases: p } of rows) {
    const steps = Object.entries(p.steps)
      .map(([name, ms]) => `${name} ${s(ms)}`)
      .join(', ')
    process.stdout.write(
      `| ${language} | ${deploy} | ${s(p.totalMs)} | ${s(p.putMs)} | ${s(p.queueMs)} | ${steps} | ${s(p.pushMs)} | ${s(p.buildEndMs)} | winch ${s(p.compileMs.winch)}, cranelift ${s(p.compileMs.cranelift)} | ${s(p.deployMs)} |\n`,
    )
  }
}
