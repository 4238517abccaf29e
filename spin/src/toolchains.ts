// Where the go and rust toolchains are and what a machine lacks to run them, shared by the two
// deployables that need it: the builder reads them to build; the control plane asks
// `toolchainProblem` before queueing a local build, so a machine without a toolchain answers
// 503 naming it.
//   go: the `go` on PATH (Go 1.21 or later builds GOOS=wasip1; 1.26 here), nothing else.
//   rust: a root directory holding Debian 13's rustc, cargo, wasm32 standard library and
//     wasm-ld plus the WASI preview 1 adapter at /opt/adapter (scripts/rust-wasm-root.sh makes
//     it under .cache/rust-wasm/current). Outside an image the build's steps run in it as their
//     root, in a bubblewrap sandbox; in the rust builder image the image's own root is the
//     toolchain ('/') and the pod is the sandbox.
//   every language, outside an image: bubblewrap (`bwrap`), prlimit and setpriv, which every
//     step of a build runs under (builders/src/sandbox/).
import { existsSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ADAPTER_PATH = 'opt/adapter/wasi_snapshot_preview1.reactor.wasm'

/** The checkout (or image) this runs from: two levels up from both spin/src and spin/dist. */
export function checkoutDir(): string {
  return fileURLToPath(new URL('../../', import.meta.url))
}

/** The rust toolchain root: `configured` when set, else the one scripts/rust-wasm-root.sh made in this checkout. */
export function rustRoot(configured: string): string {
  return configured !== '' ? configured : join(checkoutDir(), '.cache', 'rust-wasm', 'current')
}

/** Whether `tool` is an existing file in one of `path`'s directories. */
export function onPath(tool: string, path: string): boolean {
  return path.split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, tool)))
}

/** Why this machine cannot run a build's steps in their sandbox, naming what is missing; null when it can. */
export function sandboxProblem(path: string): string | null {
  const missing = ['bwrap', 'prlimit', 'setpriv'].filter((tool) => !onPath(tool, path))
  if (missing.length === 0) return null
  return `builds on this machine run every step in a sandbox: ${missing.join(', ')} not on PATH (apt-get install bubblewrap util-linux), or build in a cluster`
}

/** Why this machine cannot build go or rust, naming what is missing; null when it can. */
export function toolchainProblem(language: 'go' | 'rust', options: { path: string; rustRoot: string }): string | null {
  if (language === 'go') {
    return onPath('go', options.path)
      ? null
      : 'go builds need Go 1.21 or later: go is not on PATH (install Go, or build in a cluster)'
  }
  const root = options.rustRoot
  if (!existsSync(join(root, 'usr', 'bin', 'cargo')) || !existsSync(join(root, ADAPTER_PATH))) {
    return `rust builds need the wasm32 Rust toolchain root: none at ${root} (run scripts/rust-wasm-root.sh, or build in a cluster)`
  }
  return null
}
