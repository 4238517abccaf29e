// How each language's function becomes a component, as the steps to run in its directory.
// Every language leaves `component.wasm` in the function's directory, the source the
// generated spin.toml names.
//   js, ts: esbuild bundles the handler (stripping ts types; not a type check) with
//     build-tools' SpinEsbuildPlugin, then j2w (componentize-js) makes the component. Both
//     come from the builder's own node_modules: nothing is installed at build time.
//   go: stock Go, GOOS=wasip1 GOARCH=wasm: a wasip1 command module that Spin's WAGI executor
//     runs per request (the locked app says `executor = { type = "wagi" }`). `go mod tidy`
//     fetches the modules first (Go runs no user code while fetching or compiling); the compile
//     runs with GOPROXY=off and GOTOOLCHAIN=local.
//   rust: the Spin Rust SDK, cargo for wasm32-wasip1 with Debian's rustc (toolchains.ts):
//     `cargo fetch` downloads (no build script runs), then the compile runs offline with no
//     network in a chroot of the toolchain root (builders/sandbox/rust-build.sh); the module is
//     then made a component with the WASI preview 1 adapter (componentize.ts).
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
export type DependencyDirs = { cache: string; rustRoot: string; rustSandbox: string; path: string }

export const COMPONENT_FILE = 'component.wasm'
const RUST_TARGET = 'wasm32-wasip1'
const BUNDLE_FILE = 'dist/bundle.js'

/** The handler's entry file, in the order a js/ts function may name it. */
export function entryCandidates(language: 'js' | 'ts'): string[] {
  return language === 'ts' ? ['src/index.ts', 'index.ts'] : ['src/index.js', 'index.js']
}

/**
 * The steps that build the function in `dir`. `entry` is the js/ts entry file relative to
 * `dir`; `displayPrefix` is how the build log names `dir` (functions/{name}/) so errors point
 * at the file the user wrote.
 */
export function buildSteps(
  language: Language,
  dir: string,
  options: { toolchain: Toolchain | null; entry: string; displayPrefix: string; deps?: DependencyDirs },
): Step[] {
  const { toolchain } = options
  switch (language) {
    case 'js':
    case 'ts':
      if (toolchain === null) throw new Error(`${language} builds need the js toolchain`)
      return [
        {
          name: 'bundle',
          command: toolchain.node,
          args: [toolchain.bundleScript, options.entry, BUNDLE_FILE, options.displayPrefix],
          cwd: dir,
        },
        {
          name: 'componentize',
          command: toolchain.node,
          args: [toolchain.j2w, '-i', BUNDLE_FILE, '-o', COMPONENT_FILE],
          cwd: dir,
        },
      ]
    case 'go':
      if (options.deps === undefined) throw new Error('go builds need a dependency cache')
      return [
        { name: 'go mod tidy', command: 'go', args: ['mod', 'tidy'], cwd: dir, env: goEnv(options.deps, true) },
        {
          name: 'go build',
          command: 'go',
          args: ['build', '-trimpath', '-buildvcs=false', '-ldflags=-s -w', '-o', COMPONENT_FILE, '.'],
          cwd: dir,
          env: goEnv(options.deps, false),
        },
      ]
    case 'rust':
      if (options.deps === undefined) throw new Error('rust builds need a dependency cache')
      return [
        cargoStep('cargo fetch', dir, options.deps, true, ['fetch']),
        cargoStep('cargo build', dir, options.deps, false, [
          'build',
          '--release',
          '--offline',
          '--target',
          RUST_TARGET,
          '--message-format',
          'short',
        ]),
      ]
  }
}

// What a download step may see of the builder's environment: how to reach the network.
const NETWORK_ENV = ['HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'https_proxy', 'http_proxy', 'no_proxy', 'SSL_CERT_FILE']

// Only what Go needs: the builder's own environment (its settings, a registry's credentials)
// stays out of the build.
function goEnv(deps: DependencyDirs, fetch: boolean): NodeJS.ProcessEnv {
  const passed = fetch ? ['GOPROXY', 'GOSUMDB', 'GONOSUMDB', 'GOPRIVATE', ...NETWORK_ENV] : []
  const env: NodeJS.ProcessEnv = {
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
  }
  for (const name of passed) if (process.env[name] !== undefined) env[name] = process.env[name]
  if (!fetch) env.GOPROXY = 'off'
  return env
}

function cargoStep(name: string, dir: string, deps: DependencyDirs, fetch: boolean, cargoArgs: string[]): Step {
  const home = join(deps.cache, 'cargo')
  const target = join(deps.cache, 'target')
  if (deps.rustRoot === '/') {
    // The builder image: its own root is the toolchain and the pod is the sandbox.
    return {
      name,
      command: 'cargo',
      args: cargoArgs,
      cwd: dir,
      env: {
        PATH: deps.path,
        HOME: join(deps.cache, 'home'),
        CARGO_HOME: home,
        CARGO_TARGET_DIR: target,
        CARGO_TERM_COLOR: 'never',
        CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS: 'fallback',
        CARGO_TARGET_WASM32_WASIP1_LINKER: 'wasm-ld',
        ...(fetch ? cargoNetworkEnv() : { CARGO_NET_OFFLINE: 'true' }),
      },
    }
  }
  const namespaces = ['--mount', '--pid', '--fork', '--ipc', '--uts', ...(fetch ? [] : ['--net'])]
  return {
    name,
    command: 'unshare',
    args: [
      ...namespaces,
      '--',
      'sh',
      deps.rustSandbox,
      fetch ? 'fetch' : 'offline',
      deps.rustRoot,
      dir,
      home,
      target,
      'cargo',
      ...cargoArgs,
    ],
    cwd: dir,
    env: { PATH: deps.path },
  }
}

// cargo fetch in the image: the proxy, and the trust store as cargo reads it (its libcurl takes
// no SSL_CERT_FILE), for a registry reached through a proxy whose authority the pod is given.
function cargoNetworkEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const name of [...NETWORK_ENV, 'CARGO_HTTP_CAINFO'])
    if (process.env[name] !== undefined) env[name] = process.env[name]
  if (env.CARGO_HTTP_CAINFO === undefined && env.SSL_CERT_FILE !== undefined) env.CARGO_HTTP_CAINFO = env.SSL_CERT_FILE
  return env
}

/** Where cargo leaves the crate's module: its package name with - as _. */
export function rustArtifact(cargoToml: string): string {
  const pkg = /^\[package\]\s*$([\s\S]*?)(?=^\[|$(?![\s\S]))/m.exec(cargoToml)
  const name = pkg === null ? null : /^name\s*=\s*"([^"]+)"/m.exec(pkg[1] as string)
  if (name === null || name === undefined) throw new Error('Cargo.toml: no [package] name')
  return `${RUST_TARGET}/release/${(name[1] as string).replace(/-/g, '_')}.wasm`
}
