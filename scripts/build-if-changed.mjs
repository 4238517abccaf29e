// What `npm run relay`, `control` and `dev` run before they start: `npm run build` only when a
// source is newer than the last build this script saw succeed (or there was none), so a start
// with nothing changed costs a directory walk, not tsc and vite (10-60 s on a loaded machine).
// Plain JavaScript: it must run before anything is compiled. `npm run build` on its own always
// builds (incrementally).
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const repo = fileURLToPath(new URL('..', import.meta.url))
const stamp = join(repo, 'dist', '.built')
// What the build reads: the compiled folders, the console's sources, the worker's Rust crate,
// and the settings of each.
const packages = ['common', 'auth', 'spin', 'relay', 'control', 'builders', 'login', 'client', 'wasmkube']
const inputs = [
  ...packages.flatMap((name) => [`${name}/src`, `${name}/package.json`, `${name}/tsconfig.json`]),
  'spin/templates',
  'scripts',
  'console',
  'worker/src',
  'worker/Cargo.toml',
  'worker/Cargo.lock',
  'package.json',
  'package-lock.json',
  'tsconfig.base.json',
  'tsconfig.build.json',
]

/** The newest modification time under `path`, dependencies and generated API types left out. */
function newest(path) {
  const stat = statSync(path, { throwIfNoEntry: false })
  if (stat === undefined) return 0
  if (!stat.isDirectory()) return stat.mtimeMs
  let latest = stat.mtimeMs
  for (const entry of readdirSync(path)) {
    if (entry === 'node_modules' || entry === 'schema.d.ts') continue
    latest = Math.max(latest, newest(join(path, entry)))
  }
  return latest
}

const builtAt = existsSync(stamp) ? statSync(stamp).mtimeMs : 0
const changedAt = Math.max(...inputs.map((input) => newest(join(repo, input))))
if (builtAt === 0 || changedAt >= builtAt) {
  const started = Date.now()
  const npm = process.env.npm_execpath
  // Under `npm run`, the npm that runs this; by hand, the one on PATH.
  const [command, args] = npm === undefined ? ['npm', []] : [process.execPath, [npm]]
  const result = spawnSync(command, [...args, 'run', '--silent', 'build'], { cwd: repo, stdio: 'inherit' })
  if (result.status !== 0) process.exit(result.status ?? 1)
  writeFileSync(stamp, '')
  // The stamp's time is the build's start: a file saved while it ran is built next time.
  utimesSync(stamp, started / 1000, started / 1000)
}
