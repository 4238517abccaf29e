// The measurement: the latency phases, the wait for frames in flight, CPU and RSS snapshots.
import type { GeneratorCase, LatencyResult, Pair } from './generator-types.js'
import type { createPacer } from './generator-pacer.js'
import type { Samples } from './generator-samples.js'
import { quantile } from './generator-samples.js'
import { cpuTicks, rssBytes, TICKS_PER_SECOND } from './proc.js'

export async function measureLatency(
  c: GeneratorCase,
  rate: number,
  pacer: ReturnType<typeof createPacer>,
  pairs: Pair[],
  latencies: Samples,
  failed: () => Error | null,
): Promise<LatencyResult> {
  const settleMs = Math.min(500, c.latencyMs / 4)
  let dropFrom = -1
  let lateFrom = 0
  let start: ReturnType<typeof snapshot> | null = null
  while (pacer.elapsedMs() < c.latencyMs && failed() === null) {
    if (dropFrom === -1 && pacer.elapsedMs() >= settleMs) {
      dropFrom = latencies.count()
      lateFrom = pacer.lateness.count()
      start = snapshot(c.pid, 0)
    }
    pacer.pump()
    await sleep(1)
  }
  pacer.stop()
  const end = snapshot(c.pid, 0)
  const seconds = start === null ? NaN : (end.at - start.at) / 1000
  const serverCpuPercent =
    start === null ? NaN : ((end.serverTicks - start.serverTicks) / TICKS_PER_SECOND / seconds) * 100
  const generatorCpuPercent = start === null ? NaN : ((end.ownCpu - start.ownCpu) / 1e6 / seconds) * 100
  await drain(pairs, failed)
  const samples = latencies.from(Math.max(dropFrom, 0)).sort()
  const pacerP99Ms = quantile(pacer.lateness.from(lateFrom).sort(), 0.99)
  return {
    rate,
    samples: samples.length,
    p50Ms: quantile(samples, 0.5),
    p99Ms: quantile(samples, 0.99),
    p999Ms: quantile(samples, 0.999),
    pacerP99Ms,
    serverCpuPercent,
    generatorCpuPercent,
  }
}

/** Wait until every frame sent has been received; anything missing by then is a failure. */
export async function drain(pairs: Pair[], failed: () => Error | null): Promise<void> {
  const deadline = Date.now() + 10_000
  while (pairs.some((p) => p.received < p.sent)) {
    if (failed() !== null) return
    if (Date.now() > deadline) {
      const short = pairs
        .filter((p) => p.received < p.sent)
        .map((p) => `pair ${p.index}: ${p.sent - p.received} missing`)
      throw new Error(`frames never arrived: ${short.slice(0, 5).join(', ')}`)
    }
    await sleep(5)
  }
}

/**
 * A full collection between phases (the process runs with --expose-gc): setting up sessions
 * with fetch leaves megabytes of garbage in the old generation, and its collection, about
 * 8 ms, otherwise fell inside the latency phase.
 */
export function collectGarbage(): void {
  ;(globalThis as { gc?: () => void }).gc?.()
}

export function snapshot(pid: number, received: number) {
  return { at: performance.now(), received, serverTicks: cpuTicks(pid), serverRss: rssBytes(pid), ownCpu: cpuUsed() }
}

function cpuUsed(): number {
  const { user, system } = process.cpuUsage()
  return user + system
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
