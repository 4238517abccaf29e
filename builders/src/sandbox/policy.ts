// What each build step may see, in one place: the sandbox of every step of every language on
// the local runtime (bwrap.ts runs it), or, in a builder image, the pod (its security context
// and NetworkPolicy, deploy/ and control/src/cluster/build-jobs.ts) with the same environment
// rules. A step sees:
//   - its toolchain, read-only: the machine's /usr (js, ts, go; plus Go's own root, or the
//     builder's package, node_modules and Node for js and ts), or the rust toolchain root as /;
//   - its function's private copy, writable (the only place its artifact can go);
//   - the application's dependency cache, writable only where the step downloads or compiles;
//   - for a fetch step only, the fetch proxy's socket, its single way to the network;
//   - a private /tmp, /proc of its own pid namespace, the null, zero, random and tty devices.
import { dirname, join } from 'node:path'
import type { BuildStep } from '../languages.js'
import type { Step } from '../run-step.js'
import type { Bind, SandboxLimits, SandboxSpec } from './bwrap.js'
import { sandboxedStep } from './bwrap.js'

export type SandboxMode = 'bwrap' | 'pod'

export type SandboxContext = {
  mode: SandboxMode
  privileged: boolean
  limits: SandboxLimits
  /** The build's work directory: spin.toml, functions/ and (js, ts) the node_modules link. */
  workDir: string
  /** The application's dependency cache as the builder sees it. */
  cache: string
  /** The builder's package directory (its dist/ and package.json), its node_modules (js, ts), the Node binary. */
  builderDir: string
  nodeModules: string | null
  /** js, ts: the pre-initializer and its adapter, bound read-only over componentize-js's own
   * (js-preinit.ts); empty: componentize-js's wizer and adapter. */
  preinit: Bind[]
  node: string
  /** Go's root (GOROOT), when the build is go. */
  goRoot: string | null
  /** The rust toolchain root, when the build is rust; '/' in the rust image. */
  rustRoot: string | null
  /** A passwd file naming uid 65534 with its home in /tmp (wizer, inside j2w, looks its home up). */
  passwd: string
  /** The fetch proxy's socket on the builder's side. */
  proxySocket: string
  /** The machine's trust store, for fetches (a registry may be reached through an intercepting proxy). */
  caBundle: string | null
}

/** Where a fetch step's tools find the proxy inside the sandbox. */
export const PROXY_SOCKET_INSIDE = '/run/fetch.sock'
const BRIDGE_PORT = 1080
const CA_INSIDE = '/etc/ssl/certs/ca-certificates.crt'

// What a download step may see of the builder's environment in an image, where the pod is the
// sandbox and its network the NetworkPolicy's: how to reach the registries.
const POD_NETWORK_ENV = ['HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'https_proxy', 'http_proxy', 'no_proxy']
const POD_GO_ENV = ['GOPROXY', 'GOSUMDB', 'GONOSUMDB', 'GOPRIVATE']

/** The step to run: in its sandbox, or (in an image) as it is, with its environment alone. */
export function confine(step: BuildStep, language: string, context: SandboxContext): Step {
  if (context.mode === 'pod') return podStep(step, language)
  if (language === 'rust') return rustStep(step, context)
  const spec = hostSpec(step, language, context)
  if (step.needs.fetchFrom.length === 0) return sandboxedStep(step, spec)
  // Go speaks SOCKS5 only over TCP: the bridge listens on the sandbox's own loopback.
  const bridged: Step = {
    ...step,
    shown: [step.command, ...step.args].join(' '),
    command: context.node,
    args: [
      join(context.builderDir, 'dist', 'sandbox', 'bridge.js'),
      String(BRIDGE_PORT),
      PROXY_SOCKET_INSIDE,
      '--',
      step.command,
      ...step.args,
    ],
  }
  return sandboxedStep(bridged, {
    ...spec,
    env: { ...spec.env, HTTPS_PROXY: `socks5://127.0.0.1:${BRIDGE_PORT}`, SSL_CERT_FILE: CA_INSIDE },
  })
}

function podStep(step: BuildStep, language: string): Step {
  const env: Record<string, string> = { ...(step.env as Record<string, string>) }
  if (step.needs.fetchFrom.length > 0) {
    const passed = [...POD_NETWORK_ENV, 'SSL_CERT_FILE', ...(language === 'go' ? POD_GO_ENV : ['CARGO_HTTP_CAINFO'])]
    for (const name of passed) if (process.env[name] !== undefined) env[name] = process.env[name]
    // cargo's libcurl takes no SSL_CERT_FILE.
    if (language === 'rust' && env.CARGO_HTTP_CAINFO === undefined && env.SSL_CERT_FILE !== undefined)
      env.CARGO_HTTP_CAINFO = env.SSL_CERT_FILE
  }
  return { name: step.name, command: step.command, args: step.args, cwd: step.cwd, env }
}

function cacheBinds(step: BuildStep, from: string, to: string): { readOnly: Bind[]; writable: Bind[] } {
  return {
    writable: step.needs.writesCache.map((sub) => ({ from: join(from, sub), to: join(to, sub) })),
    readOnly: step.needs.readsCache.map((sub) => ({ from: join(from, sub), to: join(to, sub) })),
  }
}

// js, ts and go: the machine's /usr, every path where the builder sees it.
function hostSpec(step: BuildStep, language: string, context: SandboxContext): SandboxSpec {
  const cache = cacheBinds(step, context.cache, context.cache)
  const readOnly: Bind[] = [{ from: context.passwd, to: '/etc/passwd' }]
  const writable: Bind[] = [{ from: step.cwd, to: step.cwd }, ...cache.writable]
  const tool = (path: string): void => {
    if (!path.startsWith('/usr/')) readOnly.push({ from: path, to: path })
  }
  if (language === 'go') {
    if (context.goRoot === null) throw new Error('go builds need a Go root')
    tool(context.goRoot)
  }
  if (language !== 'go' || step.needs.fetchFrom.length > 0) {
    // Node runs the js steps and the go fetch's bridge.
    tool(dirname(context.node))
    tool(context.builderDir)
    // The bridge needs none of the builder's packages.
    if (context.nodeModules !== null) tool(context.nodeModules)
  }
  if (language === 'js' || language === 'ts') {
    if (context.nodeModules === null) throw new Error(`${language} builds need the builder's node_modules`)
    // Where the build directory's node_modules link points: the builder's packages, found
    // upward from the function's directory (the build directory itself stays out of sight).
    readOnly.push({ from: context.nodeModules, to: join(context.workDir, 'node_modules') })
    readOnly.push(...context.preinit)
  }
  readOnly.push(...cache.readOnly)
  const env: Record<string, string> = { ...(step.env as Record<string, string>) }
  // A home of its own only where the step keeps one in the application's cache (js: wasmtime's).
  if (!step.needs.writesCache.includes('home')) env.HOME = '/tmp'
  if (language === 'go') env.PATH = `${join(context.goRoot as string, 'bin')}:/usr/bin:/bin`
  if (step.needs.fetchFrom.length > 0) {
    readOnly.push({ from: context.proxySocket, to: PROXY_SOCKET_INSIDE })
    if (context.caBundle !== null) readOnly.push({ from: context.caBundle, to: CA_INSIDE })
  }
  // Binds apply in order: a parent before what is bound inside it.
  const order = (a: Bind, b: Bind): number => a.to.length - b.to.length
  return {
    root: { kind: 'host' },
    readOnly: readOnly.sort(order),
    writable: writable.sort(order),
    cwd: step.cwd,
    env,
    network: step.needs.fetchFrom.length > 0,
    limits: context.limits,
    privileged: context.privileged,
  }
}

// rust: the toolchain root as /, the function at /build, the application's cargo home and
// target directory at /cargo and /target (directories the root script made).
function rustStep(step: BuildStep, context: SandboxContext): Step {
  if (context.rustRoot === null) throw new Error('rust builds need the toolchain root')
  const cache = cacheBinds(step, context.cache, '/')
  const readOnly = [...cache.readOnly]
  const fetch = step.needs.fetchFrom.length > 0
  if (fetch) {
    readOnly.push({ from: context.proxySocket, to: PROXY_SOCKET_INSIDE })
    if (context.caBundle !== null) readOnly.push({ from: context.caBundle, to: CA_INSIDE })
  }
  const env: Record<string, string> = { ...(step.env as Record<string, string>), HOME: '/tmp', PATH: '/usr/bin:/bin' }
  if (fetch) {
    // libcurl reaches a SOCKS5 proxy on a Unix socket by this form of URL (curl 7.84 and later).
    env.CARGO_HTTP_PROXY = `socks5h://localhost${PROXY_SOCKET_INSIDE}`
    env.CARGO_HTTP_CAINFO = CA_INSIDE
  }
  return sandboxedStep(step, {
    root: { kind: 'dir', path: context.rustRoot },
    readOnly,
    writable: [{ from: step.cwd, to: '/build' }, ...cache.writable],
    cwd: '/build',
    env,
    network: fetch,
    limits: context.limits,
    privileged: context.privileged,
  })
}
