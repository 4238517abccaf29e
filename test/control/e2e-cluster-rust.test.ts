// A rust application in the (fake) cluster, as a user meets it: the control plane's build Job
// runs the rust builder (Debian 13's rustc for wasm32-wasip1, the Spin Rust SDK, made a
// component with the preview 1 adapter), which pushes to a real registry; the fake
// spin-operator's shim pulls the SpinApp's image, checks it and serves it through the wasmtime
// worker; invoke through the control plane answers with the template's text
// (test/helpers/cluster-template.ts). The fake Job runner gives the builder the toolchain root
// scripts/rust-wasm-root.sh makes as the image's RUST_ROOT, so the compile runs in its chroot
// sandbox: needs root (as builder-rust.test.ts). The Job's DEPENDENCY_CACHE is the builder
// tests' .cache/test-rust-deps: the SDK's crates compile once (7-8 min), not in every run
// (docs/testing.md); cargo's locks make sharing it with those tests at once safe.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { BUILD_TIMEOUT, LOAD_TIMEOUT, componentHeader, templateInCluster } from '../helpers/cluster-template.js'

t.setTimeout(BUILD_TIMEOUT + LOAD_TIMEOUT + 60_000)
const deps = join(fileURLToPath(new URL('../../', import.meta.url)), '.cache', 'test-rust-deps')

t.test(
  'rust in the cluster: Job → rust builder → registry → SpinApp → shim → invoke answers with the template',
  async (t) => {
    mkdirSync(deps, { recursive: true })
    const run = await templateInCluster(t, 'rust', { dependencyCache: deps })
    const { log } = run
    t.match(
      log,
      /==> cargo build: cargo build --release --offline --target wasm32-wasip1 --message-format short \(sandboxed, no network\)/,
      "the Job's compile runs in the toolchain root's sandbox, without network",
    )
    t.equal(
      await componentHeader(t, run),
      '0061736d0d000100',
      'a component, which the shim runs with the http executor',
    )
  },
)
