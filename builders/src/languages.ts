// How each language's function becomes a component, as the steps to run in its directory.
// Every language leaves `component.wasm` in the function's directory, the source the
// generated spin.toml names.
//   js, ts: esbuild bundles the handler (stripping ts types; not a type check) with
//     build-tools' SpinEsbuildPlugin, then j2w (componentize-js) makes the component. Both
//     come from the builder's own node_modules: nothing is installed at build time.
//   go: TinyGo with the Spin Go SDK (github.com/spinframework/spin-go-sdk/v2), the command of
//     the SDK's http template; modules from the image's cache, GOPROXY off.
//   rust: cargo for wasm32-wasip2 with the Spin Rust SDK (crate spin-sdk), offline against the
//     image's vendored registry; the crate's .wasm is then copied to component.wasm.
// go and rust are written against the SDKs' documentation: their toolchains do not exist on
// the machine this was developed on (see builders/README.md).
import type { Step } from './run-step.js'

export type Language = 'js' | 'ts' | 'go' | 'rust'

export type Toolchain = {
  /** The Node binary that runs the bundler and j2w (js and ts only: the go and rust images carry no js toolchain). */
  node: string
  /** builders/src/js-bundle.ts compiled. */
  bundleScript: string
  /** @spinframework/build-tools' j2w entry. */
  j2w: string
}

export const COMPONENT_FILE = 'component.wasm'
const BUNDLE_FILE = 'dist/bundle.js'

/** The handler's entry file, in the order a js/ts function may name it. */
export function entryCandidates (language: 'js' | 'ts'): string[] {
  return language === 'ts' ? ['src/index.ts', 'index.ts'] : ['src/index.js', 'index.js']
}

/**
 * The steps that build the function in `dir`. `entry` is the js/ts entry file relative to
 * `dir`; `displayPrefix` is how the build log names `dir` (functions/{name}/) so errors point
 * at the file the user wrote.
 */
export function buildSteps (language: Language, dir: string, options: { toolchain: Toolchain | null; entry: string; displayPrefix: string }): Step[] {
  const { toolchain } = options
  switch (language) {
    case 'js':
    case 'ts':
      if (toolchain === null) throw new Error(`${language} builds need the js toolchain`)
      return [
        { name: 'bundle', command: toolchain.node, args: [toolchain.bundleScript, options.entry, BUNDLE_FILE, options.displayPrefix], cwd: dir },
        { name: 'componentize', command: toolchain.node, args: [toolchain.j2w, '-i', BUNDLE_FILE, '-o', COMPONENT_FILE], cwd: dir },
      ]
    case 'go':
      return [{
        name: 'tinygo',
        command: 'tinygo',
        args: ['build', '-target=wasip1', '-gc=leaking', '-buildmode=c-shared', '-no-debug', '-o', COMPONENT_FILE, '.'],
        cwd: dir,
        // Modules come from the image's cache, verified when it was filled; nothing is fetched.
        env: { ...process.env, GOPROXY: 'off', GOFLAGS: '-mod=mod', GOSUMDB: 'off' },
      }]
    case 'rust':
      return [{
        name: 'cargo',
        command: 'cargo',
        args: ['build', '--target', 'wasm32-wasip2', '--release', '--offline'],
        cwd: dir,
        env: { ...process.env, CARGO_NET_OFFLINE: 'true' },
      }]
  }
}

/** Where cargo leaves the crate's component: its package name with - as _. */
export function rustArtifact (cargoToml: string): string {
  const pkg = /^\[package\]\s*$([\s\S]*?)(?=^\[|$(?![\s\S]))/m.exec(cargoToml)
  const name = pkg === null ? null : /^name\s*=\s*"([^"]+)"/m.exec(pkg[1] as string)
  if (name === null || name === undefined) throw new Error('Cargo.toml: no [package] name')
  return `target/wasm32-wasip2/release/${(name[1] as string).replace(/-/g, '_')}.wasm`
}
