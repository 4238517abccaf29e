// `npm run docs:settings`: writes each process's settings table into its page of docs/, from the
// table the process parses its settings with. test/common/settings-docs.test.ts checks the same.
import { readFileSync, writeFileSync } from 'node:fs'
import { settingsMarkdown, withSettingsTable } from '@session-relay/common/config/settings-docs'
import { SETTINGS_PAGES } from './settings-pages.js'

for (const { page, name, settings } of SETTINGS_PAGES) {
  const path = new URL(`../../${page}`, import.meta.url)
  const before = readFileSync(path, 'utf8')
  const after = withSettingsTable(before, name, settingsMarkdown(settings))
  if (after !== before) writeFileSync(path, after)
  process.stdout.write(`${page}: ${after === before ? 'unchanged' : 'written'}\n`)
}
