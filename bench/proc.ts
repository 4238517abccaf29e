// CPU time and memory of another process, read from /proc (Linux only), and the machine's own.
import { readFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'

/** USER_HZ: Linux reports utime and stime in these ticks; 100 on every mainstream kernel. */
export const TICKS_PER_SECOND = 100

/** utime + stime of `pid`, in ticks. */
export function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // The command name may contain spaces and parentheses: the fields start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return Number(fields[11]) + Number(fields[12])
}

/** Resident set size of `pid`, in bytes. */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(status)
  if (match === null) throw new Error(`no VmRSS for pid ${pid}`)
  return Number(match[1]) * 1024
}

export type Machine = { cpus: number; cpuModel: string; memoryGiB: number; node: string }

/** What every benchmark report names: the machine the figures came from. */
export function machineInfo(): Machine {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? '',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
  }
}
