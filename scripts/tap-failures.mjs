#!/usr/bin/env node
// Prints every failed assertion of a saved TAP stream with its subtest path and diagnostics.
// `npm test` saves tap's output when it is not a terminal (CI) and calls this after a failure,
// so the end of the log, which is what a CI summary shows, names what failed.
// Usage: node scripts/tap-failures.mjs <tap output file>
import { readFileSync } from 'node:fs'

const MAX_DIAG_LINES = 40
const file = process.argv[2]
if (file === undefined) {
  console.error('usage: node scripts/tap-failures.mjs <tap output file>')
  process.exit(2)
}

const lines = readFileSync(file, 'utf8').split('\n')
const indentOf = (line) => line.length - line.trimStart().length
// The names of the open subtests, by indentation: a "# Subtest: x" line opens one at its depth.
const path = []
const failures = []

for (let i = 0; i < lines.length; i++) {
  const line = lines[i]
  const depth = indentOf(line)
  const text = line.trimStart()
  const subtest = /^# Subtest: (.*)$/.exec(text)
  if (subtest) {
    path.length = depth / 4
    path.push(subtest[1])
    continue
  }
  const failed = /^not ok \d+ - (.*?)(?: # time=.*)?$/.exec(text)
  // A todo is expected to fail and does not fail the run.
  if (!failed || / # (TODO|SKIP)\b/i.test(text)) continue
  const diag = []
  if (lines[i + 1]?.trimStart() === '---') {
    for (let j = i + 2; j < lines.length && lines[j].trimStart() !== '...'; j++) {
      diag.push(lines[j].slice(depth + 2))
    }
  }
  // A subtest's own "not ok" repeats the failures inside it; keep the innermost ones only.
  const owner = path.slice(0, depth / 4)
  const name = failed[1]
  const isSubtestSummary = path.length > depth / 4 && path[depth / 4] === name
  // A file killed (tap's timeout: SIGALRM) or crashed says so only in its own summary.
  const killed = diag.some((l) => /^signal: (?!null)/.test(l) || /^exitCode: (?!null|0$)/.test(l))
  if (!isSubtestSummary || killed || diag.some((l) => /^(error|message|diff|found|wanted):/.test(l))) {
    failures.push({ where: [...owner, name].join(' > '), diag })
  }
}

if (failures.length === 0) {
  console.log('# no failed assertion in the TAP output: look above for a crash, a timeout or coverage')
} else {
  console.log(`\n# ${failures.length} failed:`)
  for (const { where, diag } of failures) {
    console.log(`\nnot ok: ${where}`)
    const shown = diag.slice(0, MAX_DIAG_LINES)
    for (const l of shown) console.log(`    ${l}`)
    if (diag.length > shown.length) console.log(`    ... ${diag.length - shown.length} more lines`)
  }
}
