// The js engine seed's maker (control/src/local/js-seed.ts) as a hostile or broken program
// could run it: a maker that floods its stdout and stderr and fails. Builds go on, and what
// the control plane keeps of that output for its warning is its last 20 lines or chunks, not
// all of it. A stand-in maker (a real child process) writes the flood.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { createLogger } from '@session-relay/control/logger'
import { localJsSeed } from '@session-relay/control/local/js-seed'
import { scratchDir } from '../helpers/control-process.js'

t.test('a maker that floods its output and fails: the build goes on, the warning holds its last 20', async (t) => {
  const dir = scratchDir(t)
  const builder = join(dir, 'builder')
  mkdirSync(builder)
  // 10,000 lines to stdout, then 64 MiB to stderr in 64 KiB chunks, then exit 1.
  writeFileSync(
    join(builder, 'make-js-seed.js'),
    `for (let i = 0; i < 10000; i++) process.stdout.write('line ' + i + '\\n')
const chunk = 'e'.repeat(65536)
for (let i = 0; i < 1024; i++) process.stderr.write(chunk)
process.stderr.write('last words', () => process.exit(1))
`,
  )
  const lines: string[] = []
  const logger = createLogger('info', { write: (line: string) => void lines.push(line) })
  const seed = localJsSeed({ dir: join(dir, 'seeds'), builder: () => join(builder, 'main.js'), logger })
  t.teardown(() => seed.close())

  const written: string[] = []
  const env = await seed.prepare(join(dir, 'app-cache'), (line) => written.push(line))
  t.same(env, { JS_ENGINE_SEEDS: join(dir, 'seeds') }, 'the build is told where seeds are, and goes on')
  t.match(written[0], /preparing the machine's seed/, "the build's log says it waited for the seed")

  const warning = lines.map((line) => JSON.parse(line) as { msg: string; output?: string; code?: number })
  const failed = warning.find((entry) => entry.msg === 'no js engine seed: js builds compile the engine')
  t.equal(failed?.code, 1, 'the failure is logged with its exit code')
  const output = failed?.output ?? ''
  t.match(output, /last words/, 'with the end of what the maker printed')
  t.ok(output.length <= 20 * 65536 + 20, `and no more than its last 20 pieces (${output.length} characters)`)
})
