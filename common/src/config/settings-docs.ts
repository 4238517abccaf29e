// The settings tables of the docs, written from the same rows the parser reads and --help prints,
// so the documentation cannot drift from the code. Each table sits between two markers in its
// page; test/common/settings-docs.test.ts fails when a page's table is not the generated one,
// and `npm run docs:settings` writes them.
import type { Setting } from './settings.js'

export function settingsMarkdown<C>(settings: ReadonlyArray<Setting<C>>): string {
  const cell = (text: string): string => text.replaceAll('|', '\\|')
  const rows = settings.map(
    (row) =>
      `| \`${row.env}\` | \`${row.flag}\` | ${row.default === '' ? 'empty' : `\`${cell(row.default)}\``} | ${cell(row.help)} |`,
  )
  return ['| env | flag | default | meaning |', '|---|---|---|---|', ...rows].join('\n')
}

/** The markers a page puts around the table named `name`. */
function settingsMarkers(name: string): { begin: string; end: string } {
  return {
    begin: `<!-- settings:${name} (generated from the settings table: npm run docs:settings) -->`,
    end: `<!-- /settings:${name} -->`,
  }
}

/** `page` with the text between `name`'s markers replaced by `table`; throws when the markers are missing. */
export function withSettingsTable(page: string, name: string, table: string): string {
  const { begin, end } = settingsMarkers(name)
  const from = page.indexOf(begin)
  const to = page.indexOf(end)
  if (from === -1 || to < from) throw new Error(`the page has no ${begin} ... ${end} markers`)
  return `${page.slice(0, from + begin.length)}\n${table}\n${page.slice(to)}`
}
