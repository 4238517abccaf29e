// What the control plane does with its js engine seed maker (control/src/local/js-seed.ts)
// beyond its output, with stand-in makers (real child processes) that say what the real one
// says: a maker that dies without cleaning up has its own work directory removed, and nothing
// else it names; an old seed the maker could not remove is a warning, not a failed build; and
// once the control plane is closing, no build starts a maker. A maker from the start runs at
// the lowest priority, a build waits for it, and one that failed is tried once more by the
// next build that needs the seed. The real maker stopped through
// the control plane's close is in local-js-seed-stop.test.ts.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { createLogger } from '@session-relay/control/logger'
import { NOT_MADE_AT_START, localJsSeed } from '@session-relay/control/local/js-seed'
import type { LocalJsSeed } from '@session-relay/control/local/js-seed'
import { scratchDir } from '../helpers/control-process.js'
import { until } from '../helpers/wait.js'

type Started = { dir: string; seeds: string; seed: LocalJsSeed; logs: Array<{ msg: string; output?: string }> }

/** The seeds machinery of a control plane whose maker is `program` (its source). */
function withMaker(t: Test, program: (dir: string, seeds: string) => string): Started {
  const dir = scratchDir(t)
  const seeds = join(dir, 'seeds')
  const builder = join(dir, 'builder')
  mkdirSync(builder)
  mkdirSync(seeds)
  writeFileSync(join(builder, 'make-js-seed.js'), program(dir, seeds))
  const lines: string[] = []
  const logger = createLogger('info', { write: (line: string) => void lines.push(line) })
  const seed = localJsSeed({ dir: seeds, builder: () => join(builder, 'main.js'), logger })
  t.teardown(() => seed.close())
  return {
    dir,
    seeds,
    seed,
    get logs() {
      return lines.map((line) => JSON.parse(line) as { msg: string; output?: string })
    },
  }
}

t.test('a maker killed before it cleaned up: its own work goes, nothing else it names', async (t) => {
  const { dir, seeds, seed } = withMaker(
    t,
    (dir, seeds) => `import { mkdirSync, writeFileSync } from 'node:fs'
const named = [${JSON.stringify(join(seeds, '.making-Ab12Cd'))}, ${JSON.stringify(join(dir, '.making-Ab12Cd'))}, ${JSON.stringify(`${seeds}/../.making-Ab12Cd`)}, ${JSON.stringify(join(seeds, 'victim'))}]
for (const path of named) {
  mkdirSync(path, { recursive: true })
  writeFileSync(path + '/file', 'x')
  console.log('working in ' + path)
}
process.kill(process.pid, 'SIGKILL')
`,
  )
  await seed.prepare(join(dir, 'app-cache'), () => {})
  t.notOk(existsSync(join(seeds, '.making-Ab12Cd')), "the maker's work, in the seeds directory, removed")
  t.ok(existsSync(join(dir, '.making-Ab12Cd', 'file')), 'the same name outside the seeds directory stays')
  t.ok(existsSync(join(seeds, 'victim', 'file')), "a name that is not a maker's stays")
})

t.test('an old seed the maker could not remove: a warning, and the build goes on', async (t) => {
  const maker = withMaker(
    t,
    () => `console.log('seed ${'a'.repeat(64)} is there')
console.log('removed ${'b'.repeat(64)}')
console.log('not removed ${'c'.repeat(64)}: EPERM: operation not permitted')
`,
  )
  const env = await maker.seed.prepare(join(maker.dir, 'app-cache'), () => {})
  t.ok(env.JS_ENGINE_SEEDS, 'the build is told where the seeds are')
  const logs = maker.logs
  t.match(
    logs.filter((entry) => entry.msg === 'js engine seed: an old one stays'),
    [{ output: `not removed ${'c'.repeat(64)}: EPERM: operation not permitted` }],
  )
  t.ok(
    logs.some((entry) => entry.msg === 'js engine seed ready'),
    'the seed is ready all the same',
  )
})

t.test('closing: a build that asks for the seed afterwards starts no maker', async (t) => {
  const { dir, seed } = withMaker(
    t,
    (dir) => `import { writeFileSync } from 'node:fs'
writeFileSync(${JSON.stringify(join(dir, 'started'))}, 'a maker ran')
`,
  )
  await seed.close()
  const written: string[] = []
  t.same(await seed.prepare(join(dir, 'app-cache'), (line) => written.push(line)), {
    JS_ENGINE_SEEDS: join(dir, 'seeds'),
  })
  t.notOk(existsSync(join(dir, 'started')), 'no maker ran: none would be stopped')
  t.same(written, [])
})

/** A FIFO a stand-in maker blocks on until the test writes it. */
function fifo(dir: string): string {
  const path = join(dir, 'release')
  execFileSync('mkfifo', [path])
  return path
}

/** A maker that records its priority setting, waits for `release` when given, then exits `code`. */
const recording =
  (code: number, release: string | null) =>
  (dir: string): string => `import { appendFileSync, readFileSync } from 'node:fs'
appendFileSync(${JSON.stringify(join(dir, 'runs'))}, (process.env.BUILD_LOWEST_PRIORITY ?? 'unset') + '\\n')
${release === null ? '' : `readFileSync(${JSON.stringify(release)})`}
console.log('${code === 0 ? `seed ${'d'.repeat(64)} made` : 'no seed: bwrap: not found'}')
process.exitCode = ${code}
`

const runs = (dir: string): string[] => readFileSync(join(dir, 'runs'), 'utf8').trim().split('\n')

t.test('from the start: one maker at the lowest priority, which a build waits for', async (t) => {
  const scratch = scratchDir(t)
  const release = fifo(scratch)
  const maker = withMaker(t, recording(0, release))
  maker.seed.start()
  const written: string[] = []
  const prepared = maker.seed.prepare(join(maker.dir, 'app-cache'), (line) => written.push(line))
  const second = maker.seed.prepare(join(maker.dir, 'other-cache'), () => {})
  writeFileSync(release, 'go')
  t.same(await prepared, { JS_ENGINE_SEEDS: maker.seeds })
  await second
  t.same(runs(maker.dir), ['true'], 'one maker, told to run its steps at the lowest priority')
  t.same(written, [
    "js engine: waiting for the machine's seed, being made since the start at the lowest priority\n",
    `js engine: seed ${'d'.repeat(64)} made\n`,
  ])
  await maker.seed.prepare(join(maker.dir, 'third-cache'), () => {})
  t.same(runs(maker.dir), ['true'], 'a later build starts none')
})

t.test('from the start, failed: the next build that needs the seed tries once more, at its own priority', async (t) => {
  const maker = withMaker(t, (dir) => {
    // The first run fails (no bubblewrap yet, say), the second makes the seed.
    const runsFile = JSON.stringify(join(dir, 'runs'))
    return `import { appendFileSync, existsSync } from 'node:fs'
const first = !existsSync(${runsFile})
appendFileSync(${runsFile}, (process.env.BUILD_LOWEST_PRIORITY ?? 'unset') + '\\n')
console.log(first ? 'no seed: bwrap: not found' : 'seed ${'d'.repeat(64)} made')
process.exitCode = first ? 1 : 0
`
  })
  maker.seed.start()
  await until(() => maker.logs.some((entry) => entry.msg === NOT_MADE_AT_START), 30_000, 'the failure')
  const written: string[] = []
  await maker.seed.prepare(join(maker.dir, 'app-cache'), (line) => written.push(line))
  t.same(runs(maker.dir), ['true', 'unset'], 'a second maker, at the build priority')
  t.match(written[0], /preparing the machine's seed/)
  await maker.seed.prepare(join(maker.dir, 'other-cache'), () => {})
  t.same(runs(maker.dir), ['true', 'unset'], 'and no third')
})
