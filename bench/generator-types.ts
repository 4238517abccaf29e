// The load generator's input and output (one JSON argument in, one JSON line out), and the
// session pair it drives.
import type { Socket } from 'node:net'

export type GeneratorCase = {
  /** http://host:port of the server under test. */
  url: string
  /** The server's pid, for its CPU time and RSS. */
  pid: number
  size: number
  pairs: number
  warmupMs: number
  durationMs: number
  /**
   * One latency phase per rate, in this order, each `latencyMs` long: messages per second
   * across all pairs; 0 is half the peak just measured. Empty or `latencyMs` 0: none.
   */
  latencyRates: number[]
  latencyMs: number
  /**
   * `batched`: small frames go out many per write, as a client that buffers does. `single`:
   * one frame per write call, as a browser's `send()` does; Node still gathers writes the
   * kernel could not take at once into one writev, as a browser's network stack would.
   */
  writes: 'batched' | 'single'
  windowBytes: number
  windowMessages: number
  /** Bearer token for POST /admin/sessions, when the server wants one. */
  adminToken?: string
}

export type GeneratorResult = {
  messagesPerSec: number
  mbPerSec: number
  serverCpuPercent: number
  serverRssBytes: number
  generatorCpuPercent: number
  /**
   * One-way latency at a fixed rate. `pacerP99Ms`: how late the generator itself wrote frames
   * that were due (its timer, its share of two cores), which the one-way figures leave out.
   * CPU figures are the latency phase's, where paced small writes cost more per message than
   * saturation does.
   */
  latency: LatencyResult[]
  /** Frames per write call in the throughput phase: 1 in `single` mode. */
  framesPerWrite: number
  messagesChecked: number
}

export type LatencyResult = {
  rate: number
  samples: number
  p50Ms: number
  p99Ms: number
  p999Ms: number
  pacerP99Ms: number
  serverCpuPercent: number
  generatorCpuPercent: number
}

export type Pair = {
  index: number
  sender: Socket
  receiver: Socket
  sent: number
  received: number
  /** Frames that may be in flight at once: bounded in messages and in bytes. */
  window: number
}
