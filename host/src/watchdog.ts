// A function that never returns (`for(;;){}`) holds the host's one JavaScript thread, where
// the front server, its timeouts and its signal handlers also run: nothing there can answer,
// time out or stop it, and the core stays busy until a redeploy. A watchdog thread watches the
// main thread's heartbeat; once it has stopped for longer than a request may take, the
// watchdog says so on stderr and kills the process, which frees the core, and the local
// runtime starts the host again with its restart backoff. (The worker runtime that replaces
// this host interrupts the one instance instead: issue 28.)
import { Worker } from 'node:worker_threads'

const BEAT_MS = 250

const WATCHER = `
const { workerData } = require('node:worker_threads')
const { writeSync } = require('node:fs')
const { beat, limitMs } = workerData
const clock = new BigInt64Array(beat)
setInterval(() => {
  if (Date.now() - Number(Atomics.load(clock, 0)) <= limitMs) return
  writeSync(2, JSON.stringify({ level: 50, time: Date.now(), process: 'spin-host', limitMs, msg: 'a request held the host past its deadline: the host kills itself to free the core' }) + '\\n')
  process.kill(process.pid, 'SIGKILL')
}, ${BEAT_MS})
`

export type Watchdog = { stop: () => void }

/** Kills the process once its main thread has not run for `limitMs`; `stop` ends the watch. */
export function startWatchdog (limitMs: number): Watchdog {
  const beat = new SharedArrayBuffer(8)
  const clock = new BigInt64Array(beat)
  const pulse = (): void => { Atomics.store(clock, 0, BigInt(Date.now())) }
  pulse()
  const heart = setInterval(pulse, BEAT_MS)
  heart.unref()
  const watcher = new Worker(WATCHER, { eval: true, workerData: { beat, limitMs } })
  watcher.unref()
  return {
    stop: () => {
      clearInterval(heart)
      void watcher.terminate()
    },
  }
}
