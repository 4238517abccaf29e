// npm run bench:density -- [--apps 10,30,100] [--worker PATH] [--json]
//
// Applications per machine (issue 28): for each count N, a fresh worker with N applications of
// the js template loaded and each answered once, then all of them idle; the worker's resident
// memory per application at each N, and a straight line through the points, which is what
// sizing past the largest measured N (1,000 applications) reads. An application is the same
// template build made distinct: a custom section naming it gives it a digest of its own, and
// its compiled file is a copy of the one compile under that digest, so no two share compiled
// code or page cache, as distinct builds would not, without compiling each (7-25 s here). Disk
// while it runs: N x (12 MB wasm + 36 MB compiled), removed after each N.
import { createHash } from 'node:crypto'
import { copyFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { readFlags } from './flags.js'
import { machineInfo } from './proc.js'
import type { Memory } from './worker-process.js'
import {
  CACHE,
  DEFAULT_WORKER,
  answer,
  buildWorker,
  memoryOf,
  startWorker,
  templateComponent,
} from './worker-process.js'

const options = { apps: [10, 30, 100], worker: '' }
const { json } = readFlags(process.argv.slice(2), {
  '--apps': (v) => {
    options.apps = v.split(',').map(Number)
  },
  '--worker': (v) => {
    options.worker = v
  },
})
if (!options.apps.every((n) => Number.isInteger(n) && n > 0))
  throw new Error('--apps: positive integers, comma-separated')

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const elapsedMs = (since: bigint): number => Number(process.hrtime.bigint() - since) / 1e6
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 300))

function leb128(value: number): Buffer {
  const bytes: number[] = []
  do {
    let byte = value & 0x7f
    value >>>= 7
    if (value !== 0) byte |= 0x80
    bytes.push(byte)
  } while (value !== 0)
  return Buffer.from(bytes)
}

/** A custom section (id 0) named `name`: valid anywhere in a module or component, ignored by the runtime. */
function customSection(name: string): Buffer {
  const named = Buffer.concat([leb128(Buffer.byteLength(name)), Buffer.from(name)])
  return Buffer.concat([Buffer.from([0]), leb128(named.length), named])
}

type Point = {
  apps: number
  idle: Memory
  loaded: Memory
  unloaded: Memory
  loadMs: number
  wakeMs: number
}

async function measure(binary: string, base: Buffer, compiled: string, apps: number): Promise<Point> {
  const dir = join(CACHE, 'density')
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(join(dir, 'compiled'), { recursive: true })
  try {
    const wasms: string[] = []
    for (let i = 0; i < apps; i++) {
      const bytes = Buffer.concat([base, customSection(`density-app-${i}`)])
      const wasm = join(dir, `app${i}.wasm`)
      writeFileSync(wasm, bytes)
      copyFileSync(compiled, join(dir, 'compiled', `${sha256(bytes)}.cwasm`))
      wasms.push(wasm)
    }
    const worker = startWorker(binary, join(dir, 'compiled'))
    try {
      await settle()
      const idle = memoryOf(worker.pid)
      const loads: number[] = []
      const urls: string[] = []
      for (const [i, wasm] of wasms.entries()) {
        const started = process.hrtime.bigint()
        urls.push((await worker.load(`app${i}`, wasm)) + '/')
        await answer(urls[i]!)
        loads.push(elapsedMs(started))
      }
      await settle()
      const loaded = memoryOf(worker.pid)
      for (let i = 0; i < apps; i++) {
        const reply = await worker.send({ op: 'idle', app: `app${i}` })
        if (!reply.ok) throw new Error(`idle app${i}: ${reply.error}`)
      }
      await settle()
      const unloaded = memoryOf(worker.pid)
      // Scale to zero: ten idle applications' first requests, each loading its compiled file again.
      const wakes: number[] = []
      for (const url of urls.slice(0, 10)) {
        const started = process.hrtime.bigint()
        await answer(url)
        wakes.push(elapsedMs(started))
      }
      return { apps, idle, loaded, unloaded, loadMs: median(loads), wakeMs: median(wakes) }
    } finally {
      await worker.stop()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Least squares: megabytes per application (slope) and the worker's own (intercept). */
function line(points: Array<{ x: number; y: number }>): { perApp: number; base: number } {
  const n = points.length
  const mx = points.reduce((s, p) => s + p.x, 0) / n
  const my = points.reduce((s, p) => s + p.y, 0) / n
  const sxx = points.reduce((s, p) => s + (p.x - mx) ** 2, 0)
  const perApp = sxx === 0 ? my / mx : points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0) / sxx
  return { perApp, base: my - perApp * mx }
}

async function main(): Promise<void> {
  const binary = options.worker === '' ? DEFAULT_WORKER : options.worker
  if (options.worker === '') buildWorker()
  const wasm = templateComponent('fn0')
  const base = readFileSync(wasm)
  const cacheDir = join(CACHE, 'compiled')
  // The one compile every copy reuses, made by the worker itself if the cache lacks it.
  const warming = startWorker(binary, cacheDir)
  try {
    await answer((await warming.load('app0', wasm)) + '/')
  } finally {
    await warming.stop()
  }
  const compiled = join(cacheDir, `${sha256(base)}.cwasm`)
  const sizes = { wasmMb: base.length / 1e6, compiledMb: statSync(compiled).size / 1e6 }

  const points: Point[] = []
  for (const apps of options.apps) points.push(await measure(binary, base, compiled, apps))
  report(points, sizes)
}

function report(points: Point[], sizes: { wasmMb: number; compiledMb: number }): void {
  const fit = (pick: (p: Point) => number): { perApp: number; base: number } =>
    line(points.map((p) => ({ x: p.apps, y: pick(p) })))
  const fits = {
    loadedRss: fit((p) => p.loaded.rssMb),
    loadedAnon: fit((p) => p.loaded.anonMb),
    idleRss: fit((p) => p.unloaded.rssMb),
    idleAnon: fit((p) => p.unloaded.anonMb),
  }
  if (json) {
    process.stdout.write(JSON.stringify({ machine: machineInfo(), options, sizes, points, fits }, null, 2) + '\n')
    return
  }
  const machine = machineInfo()
  const mb = (value: number): string => value.toFixed(1)
  process.stdout.write(
    `\n${machine.cpus} x ${machine.cpuModel}, ${machine.memoryGiB} GiB; js template, ${mb(sizes.wasmMb)} MB wasm, ${mb(sizes.compiledMb)} MB compiled\n\n`,
  )
  process.stdout.write(
    '| apps | worker alone | all answering: RSS (anonymous) | per app | all idle: RSS (anonymous) | per app | load + first answer, p50 | idle app woken, p50 |\n',
  )
  process.stdout.write('|---:|---:|---:|---:|---:|---:|---:|---:|\n')
  for (const p of points) {
    const per = (m: Memory): string =>
      `${mb((m.rssMb - p.idle.rssMb) / p.apps)} (${mb((m.anonMb - p.idle.anonMb) / p.apps)})`
    process.stdout.write(
      `| ${p.apps} | ${mb(p.idle.rssMb)} MB | ${mb(p.loaded.rssMb)} MB (${mb(p.loaded.anonMb)}) | ${per(p.loaded)} | ${mb(p.unloaded.rssMb)} MB (${mb(p.unloaded.anonMb)}) | ${per(p.unloaded)} | ${p.loadMs.toFixed(0)} ms | ${p.wakeMs.toFixed(0)} ms |\n`,
    )
  }
  const at = (f: { perApp: number; base: number }, n: number): string =>
    `${((f.base + f.perApp * n) / 1024).toFixed(2)} GB`
  process.stdout.write('\nThe line through the points (least squares), and what it gives for 1,000 applications:\n\n')
  process.stdout.write('| | per app | worker alone | 100 apps | 1,000 apps |\n|---|---:|---:|---:|---:|\n')
  for (const [name, f] of [
    ['answering, RSS', fits.loadedRss],
    ['answering, anonymous', fits.loadedAnon],
    ['idle, RSS', fits.idleRss],
    ['idle, anonymous', fits.idleAnon],
  ] as const) {
    process.stdout.write(`| ${name} | ${mb(f.perApp)} MB | ${mb(f.base)} MB | ${at(f, 100)} | ${at(f, 1000)} |\n`)
  }
}

await main()
