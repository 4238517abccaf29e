// Each local application's port, kept in the data directory: a control plane that restarts
// loads every application on the port it had, so its URL (bookmarked, configured in another
// service) stays what it was. Written whole to a new file and renamed over the old one, so a
// crash mid-write leaves the previous book, never half of one.
import { readFileSync, renameSync, writeFileSync } from 'node:fs'

export type PortBook = {
  /** The port the application had, or 0 (any) when none is kept. */
  get(appId: string): number
  set(appId: string, port: number): void
  delete(appId: string): void
}

export function openPortBook(file: string): PortBook {
  const ports = new Map<string, number>()
  try {
    const kept = JSON.parse(readFileSync(file, 'utf8')) as unknown
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
