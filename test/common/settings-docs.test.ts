// The settings tables in docs/ are the ones the code parses: generated from the same rows, so a
// setting added, renamed or re-described in code fails here until `npm run docs:settings` runs.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { settingsMarkdown, withSettingsTable } from '@session-relay/common/config/settings-docs'
import { SETTINGS_PAGES } from '../../scripts/settings-pages.js'
import { settings as builderSettings } from '@session-relay/builders/config'

// --help gives each setting one short line; what more there is to say goes in the docs.
const HELP_LIMIT = 90

for (const { page, name, settings } of SETTINGS_PAGES) {
  t.test(`${page}: its ${name} settings table is generated from the settings table`, async (t) => {
    const text = readFileSync(new URL(`../../${page}`, import.meta.url), 'utf8')
    const table = settingsMarkdown(settings)
    t.equal(withSettingsTable(text, name, table), text, 'up to date (run npm run docs:settings)')
    for (const row of settings) t.ok(text.includes(`| \`${row.env}\` | \`${row.flag}\` |`), `${row.flag} is documented`)
  })
}

t.test(`every setting's help is one line of at most ${HELP_LIMIT} characters`, async (t) => {
  const tables = [
    ...SETTINGS_PAGES.map(({ name, settings }) => ({ name, settings })),
    { name: 'builder', settings: builderSettings },
  ]
  for (const { name, settings } of tables) {
    const long = settings
      .filter((row) => row.help.length > HELP_LIMIT || row.help.includes('\n'))
      .map((row) => `${row.flag} (${row.help.length})`)
    t.same(long, [], `${name}: no help text longer`)
  }
})

t.test('a pipe in a help text is escaped, an empty default shown as empty', async (t) => {
  const table = settingsMarkdown([
    { key: 'k', env: 'X_K', flag: '--k', default: '', parse: (s: string) => s, help: 'a|b' },
  ] as never)
  t.equal(table.split('\n')[2], '| `X_K` | `--k` | empty | a\\|b |')
})
