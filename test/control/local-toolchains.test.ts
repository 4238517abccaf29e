// The go and rust toolchains a fresh machine's first builds prepare (control/src/local/
// toolchains.ts): Go fetched from a Go module proxy stand-in speaking the real protocol, pinned
// by sha256 (a mismatch refused, nothing kept), one fetch for builds asking at once; the rust
// root made by the real scripts/rust-wasm-root.sh with stand-in apt-get, debootstrap and chroot
// (no test may change the machine's packages or run debootstrap); without root, the refusal
// names the exact command.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'
import t from 'tap'
import { localToolchains } from '@session-relay/control/local/toolchains'
import type { LocalToolchainsDeps } from '@session-relay/control/local/toolchains'
import { shippedProgram } from '@session-relay/control/local/programs'
import { goProxyStandIn } from '../fixtures/go-module-proxy.js'

const VERSION = '1.99.0'
const SCRIPT = shippedProgram('scripts/rust-wasm-root.sh')

function toolchains(dir: string, over: Partial<LocalToolchainsDeps>): ReturnType<typeof localToolchains> {
  const prepared = localToolchains({
    dir,
    path: '/usr/bin:/bin',
    goProxy: 'http://127.0.0.1:9',
    isRoot: true,
    rustRootSetting: '',
    checkoutRustRoot: join(dir, 'no-checkout-root'),
    rustScript: SCRIPT,
    arch: 'x64',
    ...over,
  })
  t.teardown(() => prepared.close())
  return prepared
}

t.test('no go on PATH: the pinned Go is fetched once, checked, and put first on the builder PATH', async (t) => {
  const proxy = await goProxyStandIn(t, { version: VERSION, arch: 'amd64', hold: true })
  const dir = t.testdir({})
  // The control plane's umask: the build's steps (uid 65534) must still read and run Go.
  const umask = process.umask(0o077)
  t.teardown(() => process.umask(umask))
  const prepared = toolchains(dir, { goProxy: proxy.url, goPin: { version: VERSION, sha256: { amd64: proxy.sha256 } } })
  t.equal(prepared.problem('go'), null, 'a missing go is no refusal: the build fetches it')
  const first: string[] = []
  const second: string[] = []
  const both = [prepared.prepare('go', (l) => first.push(l)), prepared.prepare('go', (l) => second.push(l))]
  await proxy.held()
  proxy.release()
  const [env, again] = await Promise.all(both)
  const bin = join(dir, 'go', `go${VERSION}`, 'bin')
  t.same(env, { PATH: `${bin}:/usr/bin:/bin` })
  t.same(again, env, 'the build that waited gets the same Go')
  t.equal(proxy.zipRequests(), 1, 'two builds at once: one fetch')
  t.same(
    [bin, join(bin, 'go'), join(bin, '..', 'VERSION')].map((path) => statSync(path).mode & 0o777),
    [0o755, 0o755, 0o644],
    'readable by every user whatever the umask',
  )
  t.equal(execFileSync(join(bin, 'go'), { encoding: 'utf8' }), `go version go${VERSION} linux/amd64\n`, 'executable')
  t.match(
    first.join(''),
    new RegExp(
      `^toolchain: fetching Go ${VERSION} from ${proxy.url}/golang.org/toolchain/@v/v0.0.1-go${VERSION}.linux-amd64.zip\n`,
    ),
  )
  t.match(first.join(''), /toolchain: fetched 0\.0 MiB, sha256 checked, in [\d.]+ s; unpacking\n/)
  t.match(first.at(-1), new RegExp(`^toolchain: Go ${VERSION} ready at ${join(dir, 'go', `go${VERSION}`)} \\(3 files`))
  t.match(second[0], /^toolchain: another build is preparing the go toolchain: waiting for it\n$/)
  t.equal(second.at(-1), first.at(-1), 'and it reads the same progress')
  t.same(await prepared.prepare('go', () => t.fail('nothing to prepare')), env, 'the next build finds it ready')
  t.equal(proxy.zipRequests(), 1)
})

t.test(
  'a checksum that is not the pinned one is refused and nothing is kept; the next build tries again',
  async (t) => {
    const proxy = await goProxyStandIn(t, { version: VERSION, arch: 'amd64' })
    const dir = t.testdir({})
    const wrong = 'ab'.repeat(32)
    const prepared = toolchains(dir, { goProxy: proxy.url, goPin: { version: VERSION, sha256: { amd64: wrong } } })
    await t.rejects(
      prepared.prepare('go', () => {}),
      {
        message: new RegExp(`has sha256 ${proxy.sha256}, not the pinned ${wrong}; nothing kept$`),
      },
    )
    t.same(existsSync(join(dir, 'go')) ? readdirSync(join(dir, 'go')) : [], [], 'no half-written Go')
    await t.rejects(
      prepared.prepare('go', () => {}),
      /not the pinned/,
      'asked again, fetched again',
    )
    t.equal(proxy.zipRequests(), 2)
  },
)

t.test('a suitable go on PATH is used as it is; none pinned for this machine is refused', async (t) => {
  const dir = t.testdir({ go: { VERSION: 'go1.22.1\n', bin: {} }, old: { VERSION: 'go1.20.3\n', bin: {} } })
  for (const root of ['go', 'old']) writeFileSync(join(dir, root, 'bin', 'go'), '', { mode: 0o755 })
  t.same(await toolchains(dir, { path: join(dir, 'go', 'bin') }).prepare('go', () => {}), {})
  t.equal(
    toolchains(dir, { path: join(dir, 'old', 'bin'), arch: 'riscv64' }).problem('go'),
    'go builds need Go 1.21 or later: the go on PATH is older, and no Go is pinned for linux-riscv64 to fetch (install a newer Go, or build in a cluster)',
    'Go 1.20 is not enough, and no Go is pinned for riscv64',
  )
  t.equal(toolchains(dir, { path: join(dir, 'old', 'bin') }).problem('go'), null, 'pinned for x64: fetched')
})

t.test('not root: a rust build is refused with the exact command that makes the root', async (t) => {
  const dir = t.testdir({ empty: {} })
  const prepared = toolchains(dir, { isRoot: false })
  t.equal(
    prepared.problem('rust'),
    `rust builds need the wasm32 Rust toolchain root: none at ${dir}/rust-wasm/current, and making it needs root (debootstrap and chroot, about 2 minutes, 1.2 GB): run sudo ${SCRIPT} ${dir}/rust-wasm once, or start the control plane as root, or build in a cluster`,
  )
  t.equal(
    toolchains(dir, { path: join(dir, 'empty') })
      .problem('rust')
      ?.includes('no apt-get to install it'),
    true,
  )
  t.equal(
    toolchains(dir, { rustRootSetting: '/nowhere' })
      .problem('rust')
      ?.startsWith('rust builds need the wasm32 Rust toolchain root: none at /nowhere'),
    true,
    'RUST_ROOT is never made here',
  )
})

// Each stand-in appends its arguments to `calls` and does what the real one leaves behind.
const STAND_INS: Record<string, string> = {
  'apt-get': `case "$1" in
  update) touch "$BIN/lists" ;;
  install) [ -e "$BIN/lists" ] || { echo "E: Unable to locate package debootstrap" >&2; exit 100; }
    printf '#!/bin/sh\\necho "debootstrap $*" >> "%s/calls"\\nmkdir -p "$3/usr/bin"\\n' "$BIN" > "$BIN/debootstrap"; chmod +x "$BIN/debootstrap" ;;
esac`,
  chroot: `root=$1; shift
case "$*" in
  *"apt-get install"*) touch "$root/usr/bin/cargo" ;;
  *"cargo fetch"*) mkdir -p "$root/opt/adapter/cargo/registry/src/x" && echo wasm > "$root/opt/adapter/cargo/registry/src/x/wasi_snapshot_preview1.reactor.wasm" ;;
esac`,
}

t.test(
  'as root: the first rust build installs debootstrap, makes the root, and logs each step',
  { skip: process.getuid?.() !== 0 ? 'the script needs root' : false },
  async (t) => {
    const top = t.testdir({ bin: {}, toolchains: {} })
    const [bin, dir] = [join(top, 'bin'), join(top, 'toolchains')]
    for (const [name, body] of Object.entries(STAND_INS))
      writeFileSync(join(bin, name), `#!/bin/sh\nBIN=${bin}\necho "${name} $*" >> "$BIN/calls"\n${body}\n`, {
        mode: 0o755,
      })
    const prepared = toolchains(dir, { path: `${bin}:/usr/bin:/bin`, heartbeatMs: 60_000 })
    t.equal(prepared.problem('rust'), null, 'root with apt-get: the build makes it')
    const log: string[] = []
    const env = await prepared.prepare('rust', (line) => log.push(line))
    t.same(env, { RUST_ROOT: join(dir, 'rust-wasm', 'current') })
    t.ok(existsSync(join(dir, 'rust-wasm', 'current', '.complete')), 'complete, behind the current link')
    const calls = readFileSync(join(bin, 'calls'), 'utf8').trim().split('\n')
    t.match(calls, [
      /^apt-get install -y -q --no-install-recommends debootstrap$/,
      /^apt-get update/,
      /^apt-get install -y -q --no-install-recommends debootstrap$/,
      /^debootstrap --variant=minbase trixie .*\/rust-wasm\/trixie-[0-9a-f]{12}\.partial /,
      /^chroot .*\.partial \/usr\/bin\/env .* apt-get update -qq && apt-get install .* rustc cargo libstd-rust-dev-wasm32 lld ca-certificates/,
      /^chroot .*\.partial apt-get clean$/,
      /^chroot .*\.partial .*cargo fetch -q/,
    ])
    t.equal(calls.length, 7)
    t.match(log, [
      `toolchain: making the rust toolchain root with ${SCRIPT} ${dir}/rust-wasm (once per machine: about 2 minutes, 1.2 GB)\n`,
      'toolchain: installing debootstrap with apt\n',
      /^toolchain: debootstrap trixie from \S+ into .*\.partial\n$/,
      /^toolchain: apt-get install rustc cargo/,
      /^toolchain: the preview 1 adapter 36\.0\.20 from crates\.io\n$/,
      /^toolchain: the rust toolchain root is ready \(\d+ s\)\n$/,
    ])
    t.same(await prepared.prepare('rust', () => t.fail('nothing to prepare')), env, 'made once')
  },
)
