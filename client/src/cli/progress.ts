// relay attach's progress on a terminal: bytes sent and received, at most twice a second, and
// the totals once more at the end, since the last throttled line may be far behind them (20 MiB
// read ended on "received 0.0 MiB"). Nothing when stderr is not a terminal.
import type { Io } from './context.js'

const INTERVAL_MS = 500

export function progressLine(io: Pick<Io, 'stderr'>, now: () => number = Date.now) {
  const tty = io.stderr.isTTY === true
  const started = now()
  let last = 0
  let shown = false
  let totals = { sent: 0, received: 0 }
  const mib = (n: number) => (n / 1024 / 1024).toFixed(1)
  const write = (at: number) => {
    const seconds = Math.max((at - started) / 1000, 0.001)
    const { sent, received } = totals
    io.stderr.write(
      `\rsent ${mib(sent)} MiB, received ${mib(received)} MiB, ${mib((sent + received) / seconds)} MiB/s   `,
    )
    shown = true
  }
  return {
    note: (text: string) => {
      if (tty) {
        io.stderr.write(`${shown ? '\n' : ''}relay: ${text}\n`)
        shown = false
      }
    },
    update: (sent: number, received: number) => {
      totals = { sent, received }
      const at = now()
      if (!tty || at - last < INTERVAL_MS) return
      last = at
      write(at)
    },
    end: () => {
      if (!tty) return
      if (totals.sent + totals.received > 0) write(now())
      if (shown) io.stderr.write('\n')
    },
  }
}
