// `npm run build:console`: the console rebuilt only when what it is made from changed. Its
// inputs are its own files (console/, not node_modules) and the control plane's OpenAPI document,
// which its API types are generated from; their digest is kept beside the output, so a start
// with nothing changed skips the 10-30 s of type generation, type check and vite. Deleting
// dist/ (or any change) rebuilds.
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const repo = fileURLToPath(new URL('../..', import.meta.url))
const consoleDir = join(repo, 'console')
const document = join(repo, 'dist', 'console-openapi.json')
const stamp = join(repo, 'dist', 'console', '.inputs-sha256')

execFileSync(process.execPath, [join(repo, 'dist', 'scripts', 'openapi-document.js'), document], { stdio: 'inherit' })

/** Every file of the console's sources, sorted, generated API types and dependencies left out. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sources(path)
      return entry.name === 'schema.d.ts' ? [] : [path]
    })
    .sort()
}

const hash = createHash('sha256')
for (const file of [document, ...sources(consoleDir)]) {
  hash.update(relative(repo, file)).update('\0').update(readFileSync(file)).update('\0')
}
const digest = hash.digest('hex')
const built =
  existsSync(stamp) &&
  existsSync(join(repo, 'dist', 'console', 'index.html')) &&
  readFileSync(stamp, 'utf8').trim() === digest
if (!built) {
  const npm = process.env.npm_execpath
  // Under `npm run` npm names itself; run by hand, the npm on PATH.
  const [command, args] = npm === undefined ? ['npm', []] : [process.execPath, [npm]]
  execFileSync(command, [...args, 'run', '--silent', 'build', '--workspace', 'console'], {
    cwd: repo,
    stdio: 'inherit',
  })
  writeFileSync(stamp, digest + '\n')
}
