// The close-code table (relay/src/data-plane/close-codes.ts) is the only place a close code is
// written, and docs/relay.md documents exactly that table.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { CLOSE_CODES } from '@session-relay/relay/data-plane/close-codes'

const root = fileURLToPath(new URL('../../', import.meta.url))

/** The documented close-code table, as the table says it should read. */
function documentedTable(): string {
  const rows = Object.values(CLOSE_CODES).map(
    ({ code, name, message, meaning }) =>
      `| ${code} | \`${name}\` | ${message === '' ? '(no close frame)' : `"${message}"`} | ${meaning} |`,
  )
  return ['| code | name | reason text | when |', '|---|---|---|---|', ...rows].join('\n')
}

t.test('docs/relay.md documents the close-code table as it is', async (t) => {
  const docs = readFileSync(join(root, 'docs', 'relay.md'), 'utf8')
  t.ok(docs.includes(documentedTable() + '\n'), `docs/relay.md holds the table:\n${documentedTable()}`)
})

t.test("codes and names are unique, and the contract's codes are the ones decisions.md names", async (t) => {
  const rows = Object.values(CLOSE_CODES)
  t.equal(new Set(rows.map((row) => row.code)).size, rows.length)
  t.equal(new Set(rows.map((row) => row.name)).size, rows.length)
  t.strictSame(
    rows.map(({ code, message }) => [code, message]),
    [
      [4000, 'session deleted'],
      [4001, 'session expired'],
      [4002, 'peer did not arrive'],
      [4003, 'receiver too slow'],
      [4004, 'session byte limit reached'],
      [1001, 'relay shutting down'],
      [1006, ''],
    ],
  )
})

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : []
  })
}

t.test('no other relay source writes a close code as a number', async (t) => {
  const codes = new RegExp(
    `\\b(?:${Object.values(CLOSE_CODES)
      .map((row) => row.code)
      .join('|')})\\b`,
  )
  for (const file of sources(join(root, 'relay/src'))) {
    if (file.endsWith('close-codes.ts')) continue
    // Comments may name a code; code may not.
    const text = readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/\/\/.*$/gm, '')
    t.notMatch(text, codes, file.slice(root.length))
  }
})
