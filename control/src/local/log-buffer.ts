// A child process's output as the API serves it: the last `limit` bytes kept in memory (where
// a build's errors and an application's latest lines are), read whole or by last lines, and
// followed live by any number of readers until the process ends.
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

export function createLogBuffer(limit: number): LogBuffer {
  const chunks: Buffer[] = []
  let size = 0
  let ended = false
  const followers = new Set<PassThrough>()
  const text = (): string => {
    const all = Buffer.concat(chunks)
    return all.subarray(Math.max(0, all.length - limit)).toString('utf8')
  }
  return {
    write(chunk) {
      chunks.push(chunk)
      size += chunk.length
      while (chunks.length > 1 && size - (chunks[0] as Buffer).length >= limit)
        size -= (chunks.shift() as Buffer).length
      for (const follower of followers) follower.write(chunk)
    },
    end() {
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

function lastLines(text: string, count: number): string {
  if (count === 0) return ''
  const lines = text.split('\n')
  // A final newline ends the last line; it does not start another.
  const complete = text.endsWith('\n') ? lines.slice(0, -1) : lines
  const kept = complete.slice(-count).join('\n')
  return text.endsWith('\n') && kept !== '' ? kept + '\n' : kept
}
