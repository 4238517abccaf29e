// The local runtime's toolchain check for js and ts: the builder's npm packages must be where
// the control plane resolves packages. The control image leaves them out (its builds run in a
// cluster's Jobs), so a js build there answers 503 naming them rather than failing later.
import t from 'tap'
import { toolchainCheck } from '@session-relay/control/local/programs'

const ADVICE =
  '(the control image leaves it out; run the control plane from a checkout after npm ci, or build in a cluster)'

t.test("js and ts without the builder's packages: the reason names each missing one", async (t) => {
  const none = toolchainCheck('', () => false)
  t.equal(
    await none('js'),
    `js builds need the js toolchain: @spinframework/build-tools and esbuild are not installed here ${ADVICE}`,
  )
  const noEsbuild = toolchainCheck('', (name) => name !== 'esbuild')
  t.equal(await noEsbuild('ts'), `ts builds need the js toolchain: esbuild is not installed here ${ADVICE}`)
})

t.test('in a checkout after npm ci both resolve: js and ts can build', async (t) => {
  const check = toolchainCheck('')
  t.equal(await check('js'), null)
  t.equal(await check('ts'), null)
})

t.test('go needs go on PATH; rust needs the toolchain root, and root with unshare to sandbox it', async (t) => {
  const { toolchainProblem } = await import('@session-relay/spin/toolchains')
  const dir = t.testdir({
    bin: { go: '', unshare: '' },
    root: { usr: { bin: { cargo: '' } }, opt: { adapter: { 'wasi_snapshot_preview1.reactor.wasm': '' } } },
    empty: {},
  })
  const [bin, root, empty] = ['bin', 'root', 'empty'].map((name) => `${dir}/${name}`) as [string, string, string]
  t.equal(toolchainProblem('go', { path: bin, rustRoot: root, isRoot: true }), null)
  t.equal(
    toolchainProblem('go', { path: empty, rustRoot: root, isRoot: true }),
    'go builds need Go 1.21 or later: go is not on PATH (install Go, or build in a cluster)',
  )
  t.equal(toolchainProblem('rust', { path: bin, rustRoot: root, isRoot: true }), null)
  t.equal(
    toolchainProblem('rust', { path: bin, rustRoot: empty, isRoot: true }),
    `rust builds need the wasm32 Rust toolchain root: none at ${empty} (run scripts/rust-wasm-root.sh, or build in a cluster)`,
  )
  t.match(
    toolchainProblem('rust', { path: bin, rustRoot: root, isRoot: false }),
    /^rust builds need root and unshare here/,
  )
  t.match(
    toolchainProblem('rust', { path: empty, rustRoot: root, isRoot: true }),
    /^rust builds need root and unshare here/,
  )
})
