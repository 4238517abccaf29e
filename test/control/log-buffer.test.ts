// An output buffer with a file (control/src/local/log-buffer.ts): what the next buffer on the
// same file reads back is the end of everything written, in whole lines, and the file stays
// under twice the limit however the output comes.
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import t from 'tap'
import { createLogBuffer } from '@session-relay/control/local/log-buffer'

t.test('kept across buffers, bounded, in whole lines', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'log-buffer-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  let run = 0
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 64, max: 4096 }),
      fc.array(fc.stringMatching(/^[a-z0-9 ]{0,300}$/), { minLength: 1, maxLength: 80 }),
      async (limit, lines) => {
        const file = join(dir, `app-${run++}.log`)
        const first = createLogBuffer(limit, file)
        let written = ''
        for (const [i, line] of lines.entries()) {
          const text = `${i} ${line}\n`
          first.write(Buffer.from(text))
          written += text
          if (statSync(file).size >= 2 * limit) throw new Error(`the file reached ${statSync(file).size} of ${limit}`)
        }
        first.end()
        const kept = createLogBuffer(limit, file).text()
        // The end of what was written, from a line's start, at most `limit` bytes.
        if (!written.endsWith(kept)) throw new Error('not the end of what was written')
        if (kept.length > limit) throw new Error(`${kept.length} bytes kept of ${limit}`)
        if (kept !== '' && !(written.length === kept.length || written[written.length - kept.length - 1] === '\n'))
          throw new Error('not from the start of a line')
        return true
      },
    ),
    { numRuns: 200 },
  )
  t.pass('held for every mix')
})

t.test('without a file, nothing outlives the buffer', async (t) => {
  const buffer = createLogBuffer(100)
  buffer.write(Buffer.from('a line\n'))
  t.equal(buffer.text(), 'a line\n')
  t.equal(createLogBuffer(100).text(), '')
})
