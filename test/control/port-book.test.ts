// Each local application's port, kept in the data directory (control/src/local/ports.ts): what
// the next start reads back is what was set, and whatever the file holds instead (garbage, JSON
// of any shape, ports out of range, a file far too long) is ignored entry by entry or whole,
// never a throw, never a port outside 1-65535.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import t from 'tap'
import { MAX_PORT_BOOK_BYTES, openPortBook } from '@session-relay/control/local/ports'

const dir = mkdtempSync(join(tmpdir(), 'port-book-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
let run = 0
const fresh = (): string => join(dir, `ports-${run++}.json`)

t.test('kept across starts: set, changed and deleted as the last start left them', (t) => {
  fc.assert(
    fc.property(
      fc.array(
        fc.tuple(fc.constantFrom('a', 'b', 'c', 'd'), fc.option(fc.integer({ min: 1, max: 65535 }), { nil: null })),
        { maxLength: 30 },
      ),
      (changes) => {
        const file = fresh()
        const book = openPortBook(file)
        const model = new Map<string, number>()
        for (const [app, port] of changes) {
          if (port === null) {
            book.delete(app)
            model.delete(app)
          } else {
            book.set(app, port)
            model.set(app, port)
          }
        }
        const reopened = openPortBook(file)
        for (const app of ['a', 'b', 'c', 'd']) {
          if (reopened.get(app) !== (model.get(app) ?? 0)) throw new Error(`${app}: ${reopened.get(app)}`)
        }
      },
    ),
  )
  t.pass('every sequence read back as set')
  t.end()
})

t.test('whatever the file holds: no throw, and only ports in range', (t) => {
  const anyPort = fc.oneof(fc.integer(), fc.double(), fc.string(), fc.constant(null), fc.boolean())
  const content = fc.oneof(
    fc.string(),
    fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
    fc.jsonValue().map((value) => JSON.stringify(value)),
    fc.dictionary(fc.string(), anyPort).map((value) => JSON.stringify(value)),
  )
  fc.assert(
    fc.property(content, fc.string(), (text, probe) => {
      const file = fresh()
      writeFileSync(file, text)
      const book = openPortBook(file)
      for (const app of [probe, '__proto__', 'constructor', '0']) {
        const port = book.get(app)
        if (!(port === 0 || (Number.isInteger(port) && port >= 1 && port <= 65535))) throw new Error(`${app}: ${port}`)
      }
    }),
  )
  t.pass('never a throw, never a port out of range')

  const missing = openPortBook(join(dir, 'never-written.json'))
  t.equal(missing.get('a'), 0, 'no file: no port kept')

  const long = fresh()
  const entry = (i: number): string => `"app-${i}":${1024 + (i % 60_000)}`
  const entries = Array.from({ length: Math.ceil(MAX_PORT_BOOK_BYTES / 12) }, (_, i) => entry(i))
  writeFileSync(long, `{${entries.join(',')}}`)
  t.equal(openPortBook(long).get('app-0'), 0, 'a file over the bound is not read, whole')
  writeFileSync(long, `{${entry(0)}}`)
  t.equal(openPortBook(long).get('app-0'), 1024, 'the same entry in a file of its size is')
  t.end()
})
