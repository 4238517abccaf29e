// What the control plane does with its js engine seed maker (control/src/local/js-seed.ts)
// beyond its output, with stand-in makers (real child processes) that say what the real one
// says: a maker that dies without cleaning up has its own work directory removed, and nothing
// else it names; an old seed the maker could not remove is a warning, not a failed build; and
// once the control plane is closing, no build starts a maker. The real maker stopped through
// the control plane's close is in local-js-seed-stop.test.ts.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { createLogger } from '@session-relay/control/logger'
import { localJsSeed } from '@session-relay/control/local/js-seed'
import type { LocalJsSeed } from '@session-relay/control/local/js-seed'
import { scratchDir } from '../helpers/control-process.js'

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
