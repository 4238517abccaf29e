// wasmkube without a control plane: help made from the command table, exit 2 on misuse, init
// writing the language's template, and the local refusals deploy makes before any upload.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { templateFiles } from '@session-relay/spin/templates'
import { COMMANDS } from '../../wasmkube/src/table.js'
import { wasmkube } from '../helpers/wasmkube.js'

// Nothing listens here: a command that got past its checks would fail with exit 1, not 2.
const NOWHERE = { WASMKUBE_SERVER: 'http://127.0.0.1:9' }

t.test('--help: the overview lists every command; each command has its own, exit 0', async (t) => {
  const cli = wasmkube(t, NOWHERE)
  const main = await cli(['--help'])
  t.equal(main.code, 0)
  for (const name of Object.keys(COMMANDS)) {
    t.match(main.out, `wasmkube ${name}`)
    const own = await cli([name, '--help'])
    t.equal(own.code, 0, name)
    t.match(own.out, new RegExp(`^Usage: wasmkube ${name}`), name)
    for (const option of Object.keys(COMMANDS[name as keyof typeof COMMANDS].options))
      t.match(own.out, `--${option}`, `${name} --${option}`)
  }
  const none = await cli([])
  t.equal(none.code, 2, 'no command is misuse')
})

t.test('misuse exits 2 and says what was wrong', async (t) => {
  const cli = wasmkube(t, NOWHERE)
  const cases: Array<[string[], RegExp]> = [
    [['frobnicate'], /unknown command "frobnicate"/],
    [['apps', '--bogus'], /Unknown option '--bogus'/],
    [['invoke'], /missing arguments/],
    [['invoke', 'a', 'b', 'c'], /unexpected argument "c"/],
    [['invoke', 'app', 'no-slash'], /PATH must start with "\/"/],
    [['invoke', 'app', '-H', 'no colon'], /not "Name: value"/],
    [['deploy', '.'], /--name is required/],
    [['deploy', '.', '--name', 'x', '--language', 'cobol'], /--language: one of js, ts, go, rust/],
    [['init', 'x'], /--language: one of/],
    [['init', 'x', '--language', 'js', '--name', 'Bad_Name'], /not a name the platform takes/],
    [['vars', 'frob', 'app'], /unknown action "frob"/],
    [['vars', 'set', 'app'], /name at least one variable/],
    [['vars', 'unset', 'app', 'K', '--secret'], /--secret goes with vars set/],
    [['logs', 'app', '--tail', 'many'], /--tail: not a number/],
    [['apps', '--server', 'ftp://x'], /not an http\(s\) URL/],
  ]
  for (const [args, reason] of cases) {
    const outcome = await cli(args)
    t.equal(outcome.code, 2, args.join(' '))
    t.match(outcome.stderr, reason, args.join(' '))
  }
})

t.test('no server: exit 1 naming the server it could not reach (the default when nothing is set)', async (t) => {
  const outcome = await wasmkube(t, NOWHERE)(['apps'])
  t.equal(outcome.code, 1)
  t.match(outcome.stderr, /wasmkube apps: cannot reach http:\/\/127\.0\.0\.1:9/)
  const byDefault = await wasmkube(t)(['apps', '--help'])
  t.match(byDefault.out, 'http://127.0.0.1:8081')
})

t.test('init writes the template the server would give, with the name; refuses a non-empty directory', async (t) => {
  const dir = t.testdir()
  const cli = wasmkube(t, NOWHERE)
  for (const language of ['js', 'ts', 'go', 'rust'] as const) {
    const target = join(dir, `fn-${language}`)
    const outcome = await cli(['init', target, '--language', language])
    t.equal(outcome.code, 0, outcome.stderr)
    for (const [path, content] of Object.entries(templateFiles(language, `fn-${language}`))) {
      t.equal(readFileSync(join(target, path), 'utf8'), content, `${language} ${path}`)
    }
  }
  const again = await cli(['init', join(dir, 'fn-js'), '--language', 'js'])
  t.equal(again.code, 1)
  t.match(again.stderr, /is not empty/)
})

t.test('deploy refuses before any upload what the server would refuse, naming the file', async (t) => {
  const cli = wasmkube(t, NOWHERE)
  const binary = t.testdir({ 'package.json': '{}', 'logo.png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0xff, 0xfe]) })
  const refused = await cli(['deploy', binary, '--name', 'x'])
  t.equal(refused.code, 1)
  t.match(refused.stderr, /logo\.png: not UTF-8 text/)
  t.notMatch(refused.stderr, /cannot reach/, 'refused before contacting the server')

  const nul = t.testdir({ 'package.json': '{}', 'a.txt': 'a\u0000b' })
  t.match((await cli(['deploy', nul, '--name', 'x'])).stderr, /a\.txt: contains a NUL character/)

  const many = t.testdir({
    'package.json': '{}',
    many: Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`f${i}.js`, ''])),
  })
  t.match((await cli(['deploy', many, '--name', 'x'])).stderr, /more than 1000 files/)

  // Skipped files are not read at all: the binary behind .gitignore and in node_modules passes.
  const ignored = t.testdir({
    'package.json': '{}',
    '.gitignore': '# built\n*.png\n/out/\n',
    'logo.png': Buffer.from([0xff]),
    out: { 'x.bin': Buffer.from([0xff]) },
    node_modules: { dep: { 'x.node': Buffer.from([0xff]) } },
    src: { 'index.js': 'ok' },
  })
  const passed = await cli(['deploy', ignored, '--name', 'x'])
  t.equal(passed.code, 1)
  t.match(passed.stderr, /cannot reach/, 'got as far as the server')
})

t.test('the installed command: bin/wasmkube.js runs the compiled CLI', async (t) => {
  const bin = new URL('../../wasmkube/bin/wasmkube.js', import.meta.url).pathname
  const result = spawnSync(process.execPath, [bin, 'invoke', '--help'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' },
  })
  t.equal(result.status, 0, result.stderr)
  t.match(result.stdout, /^Usage: wasmkube invoke NAME/)
  const misuse = spawnSync(process.execPath, [bin, 'apps', '--nope'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' },
  })
  t.equal(misuse.status, 2)
})
