// The start commands build only when a source changed since the last build that succeeded:
// scripts/build-if-changed.mjs, copied into a scratch repository whose `build` script counts
// its runs, so what is asserted is whether a build ran, not how long anything took.
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import type { Test } from 'tap'

const script = fileURLToPath(new URL('../../scripts/build-if-changed.mjs', import.meta.url))

function scratchRepo(t: Test, buildExit = 0): { dir: string; run: () => number; builds: () => number } {
  const dir = t.testdir({
    'package.json': JSON.stringify({
      name: 'scratch',
      private: true,
      scripts: { build: `node -e "require('fs').appendFileSync('builds', 'x'); process.exit(${buildExit})"` },
    }),
    control: { src: { 'main.ts': 'export {}\n' } },
    dist: {},
    scripts: {},
  })
  copyFileSync(script, join(dir, 'scripts', 'build-if-changed.mjs'))
  const env = { ...process.env }
  delete env.npm_execpath
  return {
    dir,
    run: () => {
      try {
        execFileSync(process.execPath, [join(dir, 'scripts', 'build-if-changed.mjs')], { cwd: dir, env, stdio: 'pipe' })
        return 0
      } catch (error) {
        return (error as { status: number }).status
      }
    },
    builds: () => {
      try {
        return readFileSync(join(dir, 'builds'), 'utf8').length
      } catch {
        return 0
      }
    },
  }
}

t.test('builds the first time, not again while nothing changed, again after a source changes', async (t) => {
  const repo = scratchRepo(t)
  t.equal(repo.run(), 0)
  t.equal(repo.builds(), 1, 'no build seen yet: it builds')
  t.equal(repo.run(), 0)
  t.equal(repo.builds(), 1, 'nothing changed: no build')
  const later = Date.now() / 1000 + 5
  utimesSync(join(repo.dir, 'control/src/main.ts'), later, later)
  t.equal(repo.run(), 0)
  t.equal(repo.builds(), 2, 'a source newer than the last build: it builds')
  mkdirSync(join(repo.dir, 'control/src/new'))
  writeFileSync(join(repo.dir, 'control/src/new/file.ts'), 'export {}\n')
  utimesSync(join(repo.dir, 'control/src/new/file.ts'), later + 5, later + 5)
  t.equal(repo.run(), 0)
  t.equal(repo.builds(), 3, 'a new file in a new folder counts')
})

t.test('a build that fails leaves no stamp: its exit code is passed on and the next start builds again', async (t) => {
  const repo = scratchRepo(t, 3)
  t.equal(repo.run(), 3)
  t.equal(repo.run(), 3)
  t.equal(repo.builds(), 2)
})
