// A child process's output as the API serves it: the last `limit` bytes kept in memory (where
// a build's errors and an application's latest lines are), read whole or by last lines, and
// followed live by any number of readers until the process ends. With a `file`, the output is
// also appended there and read back by the next buffer on the same file, so an application's
// log survives a restart of the control plane; the file is cut back to its last `limit` bytes
// whenever it reaches twice that, so it stays bounded.
import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs'
import { PassThrough } from 'node:stream'
import type { Readable } from 'node:stream'

export type LogBuffer = {
  write(chunk: Buffer): void
  /** No more output: followers' streams end. */
  end(): void
  text(): string
  /** What is kept now (the last `tailLines` lines of it when given), then, with `follow`, what comes until the end. */
  open(options: { follow: boolean; tailLines?: number | undefined }): Readable
}

export function createLogBuffer(limit: number, file?: string): LogBuffer {
  const chunks: Buffer[] = []
  let size = 0
  let ended = false
  const kept = file === undefined ? null : keptOutput(file, limit)
  if (kept !== null && kept.earlier.length > 0) {
    chunks.push(kept.earlier)
    size = kept.earlier.length
  }
  const followers = new Set<PassThrough>()
  const text = (): string => {
    const all = Buffer.concat(chunks)
    return all.subarray(Math.max(0, all.length - limit)).toString('utf8')
  }
  return {
    write(chunk) {
      kept?.append(chunk, text)
      chunks.push(chunk)
      size += chunk.length
      while (chunks.length > 1 && size - (chunks[0] as Buffer).length >= limit)
        size -= (chunks.shift() as Buffer).length
      for (const follower of followers) follower.write(chunk)
    },
    end() {
      kept?.close()
      ended = true
      for (const follower of followers) follower.end()
      followers.clear()
    },
    text,
    open({ follow, tailLines }) {
      const stream = new PassThrough()
      let kept = text()
      if (tailLines !== undefined) kept = lastLines(kept, tailLines)
      stream.write(kept)
      if (!follow || ended) {
        stream.end()
        return stream
      }
      followers.add(stream)
      stream.on('close', () => followers.delete(stream))
      return stream
    },
  }
}

/** The file's last `limit` bytes from a line's start, and an appender that keeps it under twice that. */
function keptOutput(
  file: string,
  limit: number,
): { earlier: Buffer; append: (chunk: Buffer, text: () => string) => void; close: () => void } {
  let earlier = Buffer.alloc(0)
  try {
    const all = readFileSync(file)
    earlier = all.subarray(Math.max(0, all.length - limit))
    // Cut to whole lines: the cut may fall inside one (or inside a character).
    if (earlier.length < all.length) earlier = earlier.subarray(earlier.indexOf(10) + 1)
  } catch {
    // No earlier output.
  }
  let size = earlier.length
  writeFileSync(file, earlier, { mode: 0o600 })
  let fd: number | null = openSync(file, 'a')
  return {
    earlier,
    append(chunk, text) {
      if (fd === null) return
      if (size + chunk.length >= 2 * limit) {
        closeSync(fd)
        const last = Buffer.from(text() + chunk.toString('utf8'))
        const cut = last.subarray(Math.max(0, last.length - limit))
        writeFileSync(file, cut, { mode: 0o600 })
        size = cut.length
        fd = openSync(file, 'a')
        return
      }
      writeSync(fd, chunk)
      size += chunk.length
    },
    close() {
      if (fd !== null) closeSync(fd)
      fd = null
    },
  }
}

function lastLines(text: string, count: number): string {
  if (count === 0) return ''
  const lines = text.split('\n')
  // A final newline ends the last line; it does not start another.
  const complete = text.endsWith('\n') ? lines.slice(0, -1) : lines
  const kept = complete.slice(-count).join('\n')
  return text.endsWith('\n') && kept !== '' ? kept + '\n' : kept
}
