// Each local application's port, kept in the data directory: a control plane that restarts
// loads every application on the port it had, so its URL (bookmarked, configured in another
// service) stays what it was. Written whole to a new file and renamed over the old one, so a
// crash mid-write leaves the previous book, never half of one.
import { openSync, readSync, closeSync, renameSync, writeFileSync } from 'node:fs'

export type PortBook = {
  /** The port the application had, or 0 (any) when none is kept. */
  get(appId: string): number
  set(appId: string, port: number): void
  delete(appId: string): void
}

/** Far above what 10,000 applications write (about 60 bytes each); a larger file is not ours. */
export const MAX_PORT_BOOK_BYTES = 1024 * 1024

export function openPortBook(file: string): PortBook {
  const ports = new Map<string, number>()
  try {
    const kept = JSON.parse(readBounded(file, MAX_PORT_BOOK_BYTES)) as unknown
    if (typeof kept === 'object' && kept !== null) {
      for (const [appId, port] of Object.entries(kept)) {
        if (Number.isInteger(port) && (port as number) > 0 && (port as number) < 65536) ports.set(appId, port as number)
      }
    }
  } catch {
    // None yet, or not ours to read: every application gets a port anew.
  }
  const save = (): void => {
    writeFileSync(`${file}.new`, JSON.stringify(Object.fromEntries(ports)), { mode: 0o600 })
    renameSync(`${file}.new`, file)
  }
  return {
    get: (appId) => ports.get(appId) ?? 0,
    set(appId, port) {
      if (ports.get(appId) === port) return
      ports.set(appId, port)
      save()
    },
    delete(appId) {
      if (ports.delete(appId)) save()
    },
  }
}

/** The file's text, or a throw when it is missing or longer than `max` (read no further). */
function readBounded(file: string, max: number): string {
  const fd = openSync(file, 'r')
  try {
    const buffer = Buffer.alloc(max + 1)
    let length = 0
    for (let read = -1; read !== 0 && length <= max; length += read) {
      read = readSync(fd, buffer, length, buffer.length - length, null)
    }
    if (length > max) throw new Error(`${file}: over ${max} bytes`)
    return buffer.toString('utf8', 0, length)
  } finally {
    closeSync(fd)
  }
}
