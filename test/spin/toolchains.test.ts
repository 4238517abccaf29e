// The local runtime's toolchain check for js and ts: the builder's npm packages must be where
// the control plane resolves packages. The control image leaves them out (its builds run in a
// cluster's Jobs), so a js build there answers 503 naming them rather than failing later.
import { readFileSync, writeFileSync } from 'node:fs'
import t from 'tap'
import { toolchainCheck } from '@session-relay/control/local/programs'

const ADVICE =
  '(the control image leaves it out; run the control plane from a checkout after npm ci, or build in a cluster)'

t.test("js and ts without the builder's packages: the reason names each missing one", async (t) => {
  const none = toolchainCheck('', () => false, process.env.PATH)
  t.equal(
    await none('js'),
    `js builds need the js toolchain: @spinframework/build-tools and esbuild are not installed here ${ADVICE}`,
  )
  const noEsbuild = toolchainCheck('', (name) => name !== 'esbuild', process.env.PATH)
  t.equal(await noEsbuild('ts'), `ts builds need the js toolchain: esbuild is not installed here ${ADVICE}`)
})

t.test('in a checkout after npm ci both resolve: js and ts can build', async (t) => {
  const check = toolchainCheck('', undefined, process.env.PATH)
  t.equal(await check('js'), null)
  t.equal(await check('ts'), null)
})

t.test('without the sandbox tools no language builds; installed later, the next build is let through', async (t) => {
  const bin = t.testdir({ bwrap: '' })
  const check = toolchainCheck('', undefined, bin)
  t.match(await check('js'), /^builds on this machine run every step in a sandbox: prlimit, setpriv not on PATH/)
  t.match(await check('ts'), /^builds on this machine run every step in a sandbox/)
  t.match(await check('go'), /^go builds need Go/, "a language's own toolchain is named first")
  // What the first hour found: a missing answer was kept for the process's life.
  writeFileSync(`${bin}/prlimit`, '')
  writeFileSync(`${bin}/setpriv`, '')
  t.equal(await check('js'), null, 'asked again, not remembered')
})

t.test('go needs go on PATH; rust needs the toolchain root; every build needs its sandbox tools', async (t) => {
  const { sandboxProblem, toolchainProblem } = await import('@session-relay/spin/toolchains')
  const dir = t.testdir({
    bin: { go: '', bwrap: '', prlimit: '', setpriv: '' },
    partial: { bwrap: '' },
    root: { usr: { bin: { cargo: '' } }, opt: { adapter: { 'wasi_snapshot_preview1.reactor.wasm': '' } } },
    empty: {},
  })
  const [bin, partial, root, empty] = ['bin', 'partial', 'root', 'empty'].map((name) => `${dir}/${name}`) as [
    string,
    string,
    string,
    string,
  ]
  t.equal(toolchainProblem('go', { path: bin, rustRoot: root }), null)
  t.equal(
    toolchainProblem('go', { path: empty, rustRoot: root }),
    'go builds need Go 1.21 or later: go is not on PATH (install Go, or build in a cluster)',
  )
  t.equal(toolchainProblem('rust', { path: empty, rustRoot: root }), null, 'rust needs no root user any more')
  t.equal(
    toolchainProblem('rust', { path: bin, rustRoot: empty }),
    `rust builds need the wasm32 Rust toolchain root: none at ${empty} (run scripts/rust-wasm-root.sh, or build in a cluster)`,
  )
  t.equal(sandboxProblem(bin), null)
  t.equal(
    sandboxProblem(partial),
    'builds on this machine run every step in a sandbox: prlimit, setpriv not on PATH (apt-get install bubblewrap util-linux), or build in a cluster',
  )
})

t.test('as root with apt, the first build installs the sandbox tools, once at a time', async (t) => {
  const bin = t.testdir({ bwrap: '' })
  let installs = 0
  const check = toolchainCheck('', undefined, bin, async () => {
    installs++
    writeFileSync(`${bin}/prlimit`, '')
    writeFileSync(`${bin}/setpriv`, '')
    return null
  })
  t.equal(await check('js'), null, 'installed, then let through')
  t.equal(await check('ts'), null)
  t.equal(installs, 1, 'nothing installed again once it is there')
  const failing = toolchainCheck('', undefined, t.testdir({}), async () => 'apt-get install failed: E: no network')
  t.match(
    await failing('js'),
    /^builds on this machine run every step in a sandbox: bwrap, prlimit, setpriv not on PATH .*; installing it with apt failed: apt-get install failed: E: no network$/,
  )
})

t.test('apt as the installer: install, then update and install again when the lists are empty', async (t) => {
  const { aptInstaller } = await import('@session-relay/control/local/sandbox-tools')
  // A stand-in apt-get (no test may change the machine's packages): it knows no package until
  // `update`, then "installs" the three tools into its own directory.
  const dir = t.testdir({ bin: {}, empty: {} })
  const bin = `${dir}/bin`
  writeFileSync(
    `${bin}/apt-get`,
    [
      '#!/bin/sh',
      `dir=${bin}`,
      'echo "$*" >> "$dir/calls"',
      'case "$1" in',
      '  update) touch "$dir/lists" ;;',
      '  install) if [ -e "$dir/lists" ]; then touch "$dir/bwrap" "$dir/prlimit" "$dir/setpriv"; else echo "E: Unable to locate package bubblewrap" >&2; exit 100; fi ;;',
      'esac',
      '',
    ].join('\n'),
    { mode: 0o755 },
  )
  t.equal(aptInstaller(bin, false), null, 'not root: nothing to install with')
  t.equal(aptInstaller(`${dir}/empty`, true), null, 'no apt-get: nothing to install with')
  const saved = process.env.PATH
  process.env.PATH = `${bin}:${saved ?? ''}`
  t.teardown(() => {
    process.env.PATH = saved
  })
  const install = aptInstaller(bin, true)
  t.equal(await install?.(), null, 'installed after an update')
  t.same(
    readFileSync(`${bin}/calls`, 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(' ')[0]),
    ['install', 'update', 'install'],
  )
  writeFileSync(`${bin}/apt-get`, '#!/bin/sh\necho "E: no network" >&2\nexit 100\n', { mode: 0o755 })
  t.equal(await install?.(), 'apt-get update failed: E: no network', "the reason is apt's last line")
})
