// How each language's function becomes a component, as the steps to run in its directory.
// Every language leaves `component.wasm` in the function's directory, the source the
// generated spin.toml names.
//   js, ts: esbuild bundles the handler (stripping ts types; not a type check) with
//     build-tools' SpinEsbuildPlugin, then j2w (componentize-js) makes the component. Both
//     come from the builder's own node_modules: nothing is installed at build time.
//   go: stock Go, GOOS=wasip1 GOARCH=wasm: a wasip1 command module that Spin's WAGI executor
//     runs per request (the locked app says `executor = { type = "wagi" }`). `go mod tidy`
//     fetches the modules first (Go runs no user code while fetching or compiling); the compile
//     runs with GOPROXY=off, GOTOOLCHAIN=local and no version-control stamping.
//   rust: the Spin Rust SDK, cargo for wasm32-wasip1 with Debian's rustc (toolchains.ts):
//     `cargo fetch` downloads (no build script runs, and cargo is told which rustc to ask, so
//     no configuration names another), then the compile runs offline; the module is then made a
//     component with the WASI preview 1 adapter (componentize.ts).
// Where each step runs is sandbox/policy.ts's: here only what it runs and with what variables.
import { join } from 'node:path'
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

/** Where a go or rust build keeps what it downloads and compiles (one application's, kept between its builds). */
export type DependencyDirs = { cache: string; path: string }

/** What a step needs beyond its function's directory, for the sandbox to give it. */
export type StepNeeds = {
  /** Package registries the step downloads from, through the fetch proxy; none: no network at all. */
  fetchFrom: string[]
  /** Directories of the application's dependency cache the step writes (else it may only read them). */
  writesCache: string[]
  readsCache: string[]
}

export type BuildStep = Step & { needs: StepNeeds }

export const COMPONENT_FILE = 'component.wasm'
const RUST_TARGET = 'wasm32-wasip1'
const BUNDLE_FILE = 'dist/bundle.js'

// The registries a fetch may reach: Go's module proxy (which also serves the checksum database)
// and the crate registry's sparse index and downloads.
export const GO_REGISTRIES = ['proxy.golang.org']
export const RUST_REGISTRIES = ['index.crates.io', 'static.crates.io']

/** The handler's entry file, in the order a js/ts function may name it. */
export function entryCandidates(language: 'js' | 'ts'): string[] {
  return language === 'ts' ? ['src/index.ts', 'index.ts'] : ['src/index.js', 'index.js']
}

const NOTHING: StepNeeds = { fetchFrom: [], writesCache: [], readsCache: [] }

/**
 * The steps that build the function in `dir`. `entry` is the js/ts entry file relative to
 * `dir`; `displayPrefix` is how the build log names `dir` (functions/{name}/) so errors point
 * at the file the user wrote.
 */
export function buildSteps(
  language: Language,
  dir: string,
  options: { toolchain: Toolchain | null; entry: string; displayPrefix: string; deps?: DependencyDirs },
): BuildStep[] {
  const { toolchain } = options
  switch (language) {
    case 'js':
    case 'ts': {
      if (toolchain === null) throw new Error(`${language} builds need the js toolchain`)
      // componentize-js compiles its engine with wasmtime, which caches the native code under
      // HOME: kept in the application's own cache, its second build skips that compile. One
      // application's, never shared: a cache another tenant's build could write would be native
      // code this one runs.
      const env = {
        PATH: '/usr/bin:/bin',
        HOME: options.deps === undefined ? '/tmp' : join(options.deps.cache, 'home'),
      }
      const needs: StepNeeds = { ...NOTHING, writesCache: options.deps === undefined ? [] : ['home'] }
      return [
        {
          name: 'bundle',
          command: toolchain.node,
          args: [toolchain.bundleScript, options.entry, BUNDLE_FILE, options.displayPrefix],
          cwd: dir,
          env,
          needs,
        },
        {
          name: 'componentize',
          command: toolchain.node,
          args: [toolchain.j2w, '-i', BUNDLE_FILE, '-o', COMPONENT_FILE],
          cwd: dir,
          env,
          needs,
        },
      ]
    }
    case 'go': {
      if (options.deps === undefined) throw new Error('go builds need a dependency cache')
      const go = ['go/mod', 'go/build', 'tmp']
      return [
        {
          name: 'go mod tidy',
          command: 'go',
          args: ['mod', 'tidy'],
          cwd: dir,
          env: goEnv(options.deps, true),
          needs: { fetchFrom: GO_REGISTRIES, writesCache: go, readsCache: [] },
        },
        {
          name: 'go build',
          command: 'go',
          args: ['build', '-trimpath', '-buildvcs=false', '-ldflags=-s -w', '-o', COMPONENT_FILE, '.'],
          cwd: dir,
          env: goEnv(options.deps, false),
          needs: { fetchFrom: [], writesCache: go, readsCache: [] },
        },
      ]
    }
    case 'rust':
      if (options.deps === undefined) throw new Error('rust builds need a dependency cache')
      return [
        {
          name: 'cargo fetch',
          command: 'cargo',
          args: ['fetch'],
          cwd: dir,
          env: cargoEnv(options.deps, true),
          needs: { fetchFrom: RUST_REGISTRIES, writesCache: ['cargo'], readsCache: [] },
        },
        {
          name: 'cargo build',
          command: 'cargo',
          args: ['build', '--release', '--offline', '--target', RUST_TARGET, '--message-format', 'short'],
          cwd: dir,
          env: cargoEnv(options.deps, false),
          // The cargo home only read: the user's build.rs runs here, and a configuration it wrote
          // there would be read by the next build's fetch, which has the network.
          needs: { fetchFrom: [], writesCache: ['target'], readsCache: ['cargo'] },
        },
      ]
  }
}

// Only what Go needs: the builder's own environment (its settings, a registry's credentials)
// stays out of the build.
function goEnv(deps: DependencyDirs, fetch: boolean): Record<string, string> {
  const env: Record<string, string> = {
    PATH: deps.path,
    HOME: join(deps.cache, 'home'),
    GOOS: 'wasip1',
    GOARCH: 'wasm',
    CGO_ENABLED: '0',
    GOTOOLCHAIN: 'local',
    // No version-control stamping: Go would run the function's own .git configuration (hooks
    // included) through git. The compile may not change go.mod: tidy has settled it.
    GOFLAGS: fetch ? '-mod=mod -buildvcs=false' : '-mod=readonly -buildvcs=false',
    // A go.work would replace the module's own requirements.
    GOWORK: 'off',
    GOMODCACHE: join(deps.cache, 'go', 'mod'),
    GOCACHE: join(deps.cache, 'go', 'build'),
    // Go's work files, beside the cache rather than in /tmp (a small tmpfs in the images).
    GOTMPDIR: join(deps.cache, 'tmp'),
    GOTELEMETRY: 'off',
    GOPROXY: fetch ? `https://${GO_REGISTRIES[0] as string}` : 'off',
    // Checked through the proxy, which serves the checksum database too.
    GOSUMDB: 'sum.golang.org',
    GONOSUMDB: '',
    GOPRIVATE: '',
    GOINSECURE: '',
  }
  return env
}

// cargo's own variables beat any configuration file: the rustc it asks and runs, no wrapper,
// the target directory, the linker. `deps.cache` is where the sandbox shows the application's
// cache (/cargo and /target in the toolchain root, or the directory itself in an image).
function cargoEnv(deps: DependencyDirs, fetch: boolean): Record<string, string> {
  return {
    PATH: deps.path,
    HOME: join(deps.cache, 'home'),
    CARGO_HOME: join(deps.cache, 'cargo'),
    CARGO_TARGET_DIR: join(deps.cache, 'target'),
    CARGO_TERM_COLOR: 'never',
    CARGO_BUILD_RUSTC: '/usr/bin/rustc',
    CARGO_BUILD_RUSTC_WRAPPER: '',
    CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER: '',
    RUSTC_WRAPPER: '',
    RUSTC_WORKSPACE_WRAPPER: '',
    CARGO_BUILD_TARGET_DIR: join(deps.cache, 'target'),
    CARGO_TARGET_WASM32_WASIP1_LINKER: 'wasm-ld',
    // MSRV-aware resolution keeps the lockfile on crate versions Debian's rustc compiles.
    CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS: 'fallback',
    CARGO_NET_OFFLINE: fetch ? 'false' : 'true',
  }
}

/** Where cargo leaves the crate's module: its package name with - as _. */
export function rustArtifact(cargoToml: string): string {
  const pkg = /^\[package\]\s*$([\s\S]*?)(?=^\[|$(?![\s\S]))/m.exec(cargoToml)
  const name = pkg === null ? null : /^name\s*=\s*"([^"]+)"/m.exec(pkg[1] as string)
  if (name === null || name === undefined) throw new Error('Cargo.toml: no [package] name')
  return `${RUST_TARGET}/release/${(name[1] as string).replace(/-/g, '_')}.wasm`
}
