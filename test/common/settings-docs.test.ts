// The settings tables in docs/ are the ones the code parses: generated from the same rows, so a
// setting added, renamed or re-described in code fails here until `npm run docs:settings` runs.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { settingsMarkdown, withSettingsTable } from '@session-relay/common/config/settings-docs'
import { SETTINGS_PAGES } from '../../scripts/settings-pages.js'

for (const { page, name, settings } of SETTINGS_PAGES) {
  t.test(`${page}: its ${name} settings table is generated from the settings table`, async (t) => {
    const text = readFileSync(new URL(`../../${page}`, import.meta.url), 'utf8')
    const table = settingsMarkdown(settings)
    t.equal(withSettingsTable(text, name, table), text, 'up to date (run npm run docs:settings)')
    for (const row of settings) t.ok(text.includes(`| \`${row.env}\` | \`${row.flag}\` |`), `${row.flag} is documented`)
  })
}

t.test('a pipe in a help text is escaped, an empty default shown as empty', async (t) => {
  const table = settingsMarkdown([{ key: 'k', env: 'X_K', flag: '--k', default: '', parse: (s: string) => s, help: 'a|b' }] as never)
  t.equal(table.split('\n')[2], '| `X_K` | `--k` | empty | a\\|b |')
})
