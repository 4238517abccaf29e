/** Longer than this, a line is cut: a worker gone wrong cannot make the control plane hold it all. */
const MAX_LINE_BYTES = 1024 * 1024

/** Calls `onLine` for each line of `stream`; a line longer than MAX_LINE_BYTES is cut there. */
export function lines(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (stream === null) return
  let rest = ''
  stream.setEncoding('utf8')
  stream.on('data', (chunk: string) => {
    rest += chunk
    for (let newline = rest.indexOf('\n'); newline !== -1; newline = rest.indexOf('\n')) {
      const line = rest.slice(0, newline)
      rest = rest.slice(newline + 1)
      if (line !== '') onLine(line)
    }
    if (rest.length > MAX_LINE_BYTES) {
      onLine(rest.slice(0, MAX_LINE_BYTES))
      rest = ''
    }
  })
}
