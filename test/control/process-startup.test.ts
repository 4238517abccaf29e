// The compiled control plane refusing to start, as an operator meets it: exit codes, the one
// line on stderr, --help. Apart from process.test.ts (the running process) so that each file
// stays well inside tap's per-file time limit on a busy machine.
import { chmodSync, chownSync, mkdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { settings } from '@session-relay/control/config'
import { controlProcess, scratchDir } from '../helpers/control-process.js'
import { lines } from '../helpers/process.js'

const { runToExit } = controlProcess

// Sixteen control plane processes that stop before listening: 51 s measured at a load average of 9 on two cores.
t.setTimeout(300_000)

t.test('startup errors: exit code 2 and exactly one line on stderr, nothing on stdout', async (t) => {
  const dir = scratchDir(t)
  const aFile = join(dir, 'a-file')
  writeFileSync(aFile, 'not a directory')
  const skip = ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0', '--data-dir', join(dir, 'data')]
  const cases: Array<[string, string[], Record<string, string>, RegExp]> = [
    ['an unknown flag', [...skip, '--bogus'], {}, /unknown flag --bogus/],
    [
      'no issuer and no skip-auth',
      ['--addr', '127.0.0.1:0'],
      {},
      /--oidc-issuer \(PLATFORM_OIDC_ISSUER\) is required unless --dev-insecure-skip-auth/,
    ],
    ['a bad address', [...skip, '--addr', 'nope'], {}, /"nope".*--addr/],
    [
      'a bad address in the environment',
      ['--dev-insecure-skip-auth'],
      { PLATFORM_ADDR: ':99999' },
      /":99999".*PLATFORM_ADDR/,
    ],
    ['a zero archive limit', [...skip, '--max-archive-bytes', '0'], {}, /--max-archive-bytes.*greater than 0/],
    [
      'a required claim without a value',
      [...skip, '--required-claim', 'groups'],
      {},
      /--required-claim: expected claim=value/,
    ],
    [
      'skip-auth that is no boolean',
      ['--addr', '127.0.0.1:0'],
      { PLATFORM_DEV_INSECURE_SKIP_AUTH: 'yes' },
      /"yes".*PLATFORM_DEV_INSECURE_SKIP_AUTH/,
    ],
    [
      'a database URL of another kind',
      [...skip],
      { PLATFORM_DATABASE_URL: 'mysql://root:hunter2@db/x' },
      /^control: invalid value for PLATFORM_DATABASE_URL: expected a postgres/,
    ],
    [
      'a data directory that cannot be created',
      ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0', '--data-dir', join(aFile, 'data')],
      {},
      /cannot create --data-dir .*a-file\/data/,
    ],
  ]
  // One child at a time: each exit wait then times one Node start, not nine
  // starts fighting over two busy cores, which is what made this test time out under load.
  for (const [what, args, env, message] of cases) {
    const run = await runToExit(t, args, env)
    t.equal(run.code, 2, `${what}: exit code 2`)
    t.equal(run.stdout, '', `${what}: nothing on stdout`)
    t.equal(lines(run.stderr).length, 1, `${what}: exactly one line on stderr`)
    t.match(run.stderr, message, `${what}: says what is wrong`)
    t.match(run.stderr, /^control: /, `${what}: names the program`)
    t.notMatch(run.stderr, /hunter2/, `${what}: no password`)
  }
})

t.test('--help: the usage from the settings table on stdout, exit 0, whatever else is given', async (t) => {
  for (const args of [['--help'], ['--addr', 'nope', '--help']]) {
    const run = await runToExit(t, args)
    t.equal(run.code, 0, `${args.join(' ')}: exit code 0`)
    t.equal(run.stderr, '', `${args.join(' ')}: nothing on stderr`)
    t.match(run.stdout, /^Usage: control \[options\]\n/)
    for (const row of settings) {
      const shown = row.default === '' ? '' : ` (default ${row.default})`
      t.ok(
        run.stdout.includes(`  ${row.flag}, ${row.env}${shown}\n      ${row.help}\n`),
        `${row.flag}: flag, variable, default and help`,
      )
    }
  }
})

// Each unusable data directory ends the start with exit code 2 and one line that names it and
// says why. Tests run as root, whom chmod does not stop, so "not writable" is a directory the
// kernel refuses writes in whatever the caller: /sys/kernel (sysfs refuses new files, EACCES).
// /proc/<new name> is the path Node's recursive mkdir used to spin on forever (ENOENT from a
// parent that exists).
t.test('an unusable data directory: exit code 2 and one line naming it and the reason', async (t) => {
  const dir = scratchDir(t)
  const aFile = join(dir, 'a-file')
  writeFileSync(aFile, 'not a directory')
  const cases: Array<[string, string, RegExp]> = [
    [
      'a path under /proc that cannot be created',
      '/proc/control-forbidden',
      /^control: cannot create --data-dir \/proc\/control-forbidden: ENOENT/,
    ],
    ['a file', aFile, /^control: cannot use --data-dir .*a-file: it is not a directory/],
    ['below a file', join(aFile, 'data'), /^control: cannot create --data-dir .*a-file\/data: ENOTDIR/],
    [
      'a directory the kernel refuses writes in',
      '/sys/kernel',
      /^control: cannot write to --data-dir \/sys\/kernel: EACCES/,
    ],
  ]
  // One at a time, for the same reason as the startup errors above.
  for (const [what, dataDir, message] of cases) {
    const run = await runToExit(t, ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0', '--data-dir', dataDir])
    t.equal(run.code, 2, `${what}: exit code 2`)
    t.equal(run.stdout, '', `${what}: nothing on stdout`)
    t.equal(lines(run.stderr).length, 1, `${what}: exactly one line on stderr`)
    t.match(run.stderr, message, `${what}: names the directory and the reason`)
  }
})

t.test('an unreachable database: a fatal log line and exit code 1', async (t) => {
  const run = await runToExit(t, ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0'], {
    PLATFORM_DATABASE_URL: 'postgres://u:hunter2@127.0.0.1:1/x',
  })
  t.equal(run.code, 1)
  const fatal = lines(run.stdout)
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .find((line) => line.level === 60)
  t.match(fatal, { msg: 'control plane failed to start', err: { code: 'ECONNREFUSED' } })
  t.notMatch(run.stdout + run.stderr, /hunter2/, 'the password is not logged')
})

t.test('a compiled-components directory others may write to or own: exit code 2 naming it', async (t) => {
  const dir = scratchDir(t)
  const open = join(dir, 'open')
  mkdirSync(open)
  chmodSync(open, 0o777)
  const groupWritable = join(dir, 'group')
  mkdirSync(groupWritable)
  chmodSync(groupWritable, 0o770)
  // Someone else's: made for another uid when this runs as root, else the root's own /.
  let foreign = '/'
  if (process.geteuid?.() === 0) {
    foreign = join(dir, 'foreign')
    mkdirSync(foreign, { mode: 0o700 })
    chownSync(foreign, 65534, 65534)
  }
  const owner = statSync(foreign).uid
  const cases: Array<[string, string, RegExp]> = [
    ['world-writable', open, /^control: --local-cache-dir .*\/open: mode 777 lets other users write to it/],
    ['group-writable', groupWritable, /^control: --local-cache-dir .*\/group: mode 770 lets other users write to it/],
    [
      "another user's",
      foreign,
      new RegExp(`^control: --local-cache-dir ${foreign}: owned by uid ${owner}, not by uid`),
    ],
  ]
  for (const [what, cacheDir, message] of cases) {
    const run = await runToExit(t, [
      ...['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0', '--runtime', 'local'],
      ...['--data-dir', join(dir, `data-${what}`), '--local-cache-dir', cacheDir],
    ])
    t.equal(run.code, 2, `${what}: exit code 2`)
    t.equal(lines(run.stderr).length, 1, `${what}: one line on stderr`)
    t.match(run.stderr, message, `${what}: names the setting, the directory and the reason`)
  }
  const made = join(dir, 'made', 'compiled')
  await controlProcess.start(t, [
    ...['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0', '--runtime', 'local'],
    ...['--data-dir', join(dir, 'data-ok'), '--local-cache-dir', made],
  ])
  t.equal(statSync(made).mode & 0o777, 0o700, 'a missing one is made owner-only, and the start goes on')
})
