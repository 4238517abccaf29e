// The build sandbox itself: what each language's steps are given (builders/src/sandbox/policy.ts),
// and the real bubblewrap around a command, as root (privileged, dropping to 65534) and as an
// unprivileged user (a user namespace): who it runs as, what it sees, its limits.
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { buildSteps } from '@session-relay/builders/languages'
import type { BuildStep } from '@session-relay/builders/languages'
import { runStep } from '@session-relay/builders/run-step'
import { SANDBOX_UID, sandboxCommand, sandboxedStep } from '@session-relay/builders/sandbox/bwrap'
import type { SandboxSpec } from '@session-relay/builders/sandbox/bwrap'
import { confine } from '@session-relay/builders/sandbox/policy'
import type { SandboxContext } from '@session-relay/builders/sandbox/policy'

const limits = {
  cpuSeconds: 60,
  addressSpaceBytes: 8 * 1024 ** 3,
  fileSizeBytes: 1024 ** 2,
  processes: 512,
  tmpBytes: 16 * 1024 ** 2,
  lowestPriority: false,
}
const context: SandboxContext = {
  mode: 'bwrap',
  privileged: true,
  limits,
  workDir: '/w',
  cache: '/c',
  builderDir: '/b',
  nodeModules: '/b/node_modules',
  preinit: [],
  node: '/opt/node/bin/node',
  goRoot: '/opt/go',
  rustRoot: '/r',
  passwd: '/s/passwd',
  proxySocket: '/s/fetch.sock',
  caBundle: '/etc/ssl/certs/ca-certificates.crt',
}
const toolchain = { node: '/opt/node/bin/node', bundleScript: '/b/dist/js-bundle.js', j2w: '/b/j2w.js' }

/** A compiled language's two steps with the application's cache at `cache` as the step sees it. */
function compiledSteps(language: 'go' | 'rust', cache: string): BuildStep[] {
  return buildSteps(language, '/w/functions/f', {
    toolchain: null,
    entry: '',
    displayPrefix: '',
    deps: { cache, path: '/usr/bin' },
  })
}

/** The bwrap arguments as [option, ...values] pairs, for matching. */
function binds(args: string[], option: string): Array<[string, string]> {
  const found: Array<[string, string]> = []
  args.forEach((arg, index) => {
    if (arg === option) found.push([args[index + 1] as string, args[index + 2] as string])
  })
  return found
}

t.test('js: no network, the function writable, the builder read-only, an environment of two variables', async (t) => {
  const [bundle] = buildSteps('js', '/w/functions/f', {
    toolchain,
    entry: 'src/index.js',
    displayPrefix: 'functions/f/',
  })
  const step = confine(bundle!, 'js', context)
  t.equal(step.command, 'prlimit')
  t.ok(step.args.includes('--unshare-net'), 'a network namespace of its own')
  t.same(binds(step.args, '--bind'), [['/w/functions/f', '/w/functions/f']], 'only the function is writable')
  t.same(
    binds(step.args, '--ro-bind').filter(([from]) => from !== '/usr'),
    [
      ['/b', '/b'],
      ['/s/passwd', '/etc/passwd'],
      ['/opt/node/bin', '/opt/node/bin'],
      ['/b/node_modules', '/b/node_modules'],
      ['/b/node_modules', '/w/node_modules'],
    ],
  )
  t.same(binds(step.args, '--setenv'), [
    ['PATH', '/usr/bin:/bin'],
    ['HOME', '/tmp'],
  ])
  t.notOk(step.args.includes('/run/fetch.sock'), 'no proxy')
  t.match(step.shown, /^\/opt\/node\/bin\/node \/b\/dist\/js-bundle\.js .* \(sandboxed, no network\)$/)
})

t.test(
  "js with a pre-initializer: it and its adapter are bound read-only over componentize-js's, after node_modules",
  async (t) => {
    const wizer = '/b/node_modules/@bytecodealliance/wizer-linux-x64/wizer'
    const adapter = '/b/node_modules/@bytecodealliance/jco/lib/wasi_snapshot_preview1.reactor.wasm'
    const preinit = [
      { from: '/x/preinit', to: wizer },
      { from: '/t/adapter.wasm', to: adapter },
    ]
    const steps = buildSteps('js', '/w/functions/f', {
      toolchain,
      entry: 'src/index.js',
      displayPrefix: 'functions/f/',
    })
    for (const step of steps) {
      const args = confine(step, 'js', { ...context, preinit }).args
      const readOnly = binds(args, '--ro-bind')
      t.same(
        readOnly.slice(-2),
        [
          ['/x/preinit', wizer],
          ['/t/adapter.wasm', adapter],
        ],
        `${step.name}: the last binds, so nothing binds over them`,
      )
      t.ok(readOnly.findIndex(([, to]) => to === '/b/node_modules') < readOnly.length - 2)
    }
    const go = confine(compiledSteps('go', '/c')[1]!, 'go', { ...context, preinit })
    t.notOk(go.args.includes('/x/preinit') || go.args.includes('/t/adapter.wasm'), 'only js and ts steps see them')
  },
)

t.test('go: the fetch reaches the proxy through the bridge; the compile has no network', async (t) => {
  const [tidy, compile] = compiledSteps('go', '/c')
  const fetch = confine(tidy!, 'go', context)
  t.ok(fetch.args.includes('/b/dist/sandbox/bridge.js'), 'Go speaks to the proxy through the bridge')
  t.same(
    binds(fetch.args, '--ro-bind').find(([, to]) => to === '/run/fetch.sock'),
    ['/s/fetch.sock', '/run/fetch.sock'],
  )
  t.match(Object.fromEntries(binds(fetch.args, '--setenv')), {
    HTTPS_PROXY: 'socks5://127.0.0.1:1080',
    PATH: '/opt/go/bin:/usr/bin:/bin',
    GOPROXY: 'https://proxy.golang.org',
  })
  const build = confine(compile!, 'go', context)
  t.notOk(build.args.includes('/run/fetch.sock'))
  t.notOk(build.args.includes('/b/dist/sandbox/bridge.js'))
  t.same(
    binds(build.args, '--bind').map(([from]) => from),
    ['/c/tmp', '/c/go/mod', '/c/go/build', '/w/functions/f'],
  )
})

t.test('rust: the toolchain root is /, the cargo home writable only while fetching', async (t) => {
  const [fetchStep, compileStep] = compiledSteps('rust', '/')
  const fetch = confine(fetchStep!, 'rust', context)
  t.same(binds(fetch.args, '--ro-bind')[0], ['/r', '/'])
  t.same(binds(fetch.args, '--bind'), [
    ['/w/functions/f', '/build'],
    ['/c/cargo', '/cargo'],
  ])
  t.match(Object.fromEntries(binds(fetch.args, '--setenv')), {
    CARGO_HOME: '/cargo',
    CARGO_HTTP_PROXY: 'socks5h://localhost/run/fetch.sock',
    CARGO_BUILD_RUSTC_WRAPPER: '',
  })
  const compile = confine(compileStep!, 'rust', context)
  t.same(binds(compile.args, '--bind'), [
    ['/w/functions/f', '/build'],
    ['/c/target', '/target'],
  ])
  t.ok(
    binds(compile.args, '--ro-bind').some(([from, to]) => from === '/c/cargo' && to === '/cargo'),
    'read-only',
  )
  t.notOk(compile.args.includes('/run/fetch.sock'))
})

t.test("in an image the pod is the sandbox: a fetch gets the pod's proxy, nothing else of the builder's", async (t) => {
  const saved = { ...process.env }
  t.teardown(() => {
    process.env = saved
  })
  Object.assign(process.env, {
    SSL_CERT_FILE: '/pod/ca.crt',
    HTTPS_PROXY: 'http://proxy:3128',
    DOCKER_CONFIG: '/secret/docker',
  })
  delete process.env.CARGO_HTTP_CAINFO
  const [fetchStep, compileStep] = compiledSteps('rust', '/c')
  const pod = { ...context, mode: 'pod' as const }
  const fetch = confine(fetchStep!, 'rust', pod)
  t.equal(fetch.command, 'cargo', "cargo runs in the image's own root")
  t.match(fetch.env, { CARGO_HTTP_CAINFO: '/pod/ca.crt', HTTPS_PROXY: 'http://proxy:3128', CARGO_HOME: '/c/cargo' })
  t.equal(fetch.env?.DOCKER_CONFIG, undefined, "nothing else of the builder's environment")
  const compile = confine(compileStep!, 'rust', pod)
  t.equal(compile.env?.HTTPS_PROXY, undefined, 'the compile gets no network settings')
  t.equal(compile.env?.CARGO_NET_OFFLINE, 'true')
})

/** A directory the sandbox's user can write, removed after the test. */
async function workDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sandbox-test-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await chmod(dir, 0o777)
  return dir
}

/** A sandbox of the machine's /usr with `dir` writable as /work. */
function hostSpec(dir: string, privileged: boolean, stepLimits = limits): SandboxSpec {
  return {
    root: { kind: 'host' },
    readOnly: [],
    writable: [{ from: dir, to: '/work' }],
    cwd: '/work',
    env: { PATH: '/usr/bin:/bin' },
    network: false,
    limits: stepLimits,
    privileged,
  }
}

/** Runs `script` with sh in a sandbox of the machine's /usr; `as` spawns bwrap as that uid. */
async function inSandbox(
  t: Test,
  script: string,
  options: { privileged: boolean; as?: number; lowestPriority?: boolean },
): Promise<string> {
  const spec = hostSpec(await workDir(t), options.privileged, {
    ...limits,
    lowestPriority: options.lowestPriority ?? false,
  })
  const { command, args } = sandboxCommand(spec, 'sh', ['-c', script])
  const child = spawn(command, args, {
    cwd: '/',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH },
    ...(options.as === undefined ? {} : { uid: options.as, gid: options.as }),
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
  await new Promise((resolve) => child.on('close', resolve))
  return output
}

const PROBE = [
  'echo uid=$(id -u) gid=$(id -g)',
  'grep -E "^(NoNewPrivs|CapEff):" /proc/self/status | tr -s "\\t" " "',
  'grep -E "^Max (cpu time|file size|processes|address space)" /proc/self/limits | tr -s " " " "',
  'for p in /work /root /etc/shadow /home /var /tmp; do test -e $p && echo sees $p; done',
  'echo procs=$(ls -d /proc/[0-9]* | wc -l)',
  'head -c 2097152 /dev/zero > /work/big 2>/dev/null; echo big=$(wc -c < /work/big)',
  'echo env=$(env | cut -d= -f1 | sort | tr "\\n" ",")',
].join('; ')

t.test('as root: bwrap privileged drops to 65534, no capabilities, no new privileges, limits in force', async (t) => {
  const out = await inSandbox(t, PROBE, { privileged: true })
  t.match(out, /uid=65534 gid=65534/)
  t.match(out, /NoNewPrivs: 1/)
  t.match(out, /CapEff: 0000000000000000/)
  t.match(out, /Max cpu time 60 61 seconds/, 'SIGXCPU at the limit, SIGKILL a second later')
  t.match(out, /Max file size 1048576 1048576 bytes/)
  t.match(out, /Max processes 512 512 processes/)
  t.match(out, /Max address space 8589934592 8589934592 bytes/)
  t.match(out, /sees \/work\nsees \/tmp\n/, 'only its own directory and /tmp')
  t.notMatch(out, /sees \/(root|etc\/shadow|home|var)/)
  t.match(out, /procs=[1-5]\n/, 'its own pid namespace')
  t.match(out, /big=1048576/, 'a file stops at RLIMIT_FSIZE')
  t.match(out, /env=PATH,PWD,\n/, 'an empty environment but PATH (and the PWD the shell sets)')
})

t.test('as an unprivileged user: a user namespace maps it to 65534, with the same view', async (t) => {
  const out = await inSandbox(t, PROBE, { privileged: false, as: 65534 })
  t.match(out, /uid=65534 gid=65534/)
  t.match(out, /NoNewPrivs: 1/)
  t.match(out, /CapEff: 0000000000000000/)
  t.match(out, /Max file size 1048576 1048576 bytes/)
  t.notMatch(out, /sees \/(root|etc\/shadow|home|var)/)
  t.match(out, /big=1048576/)
  const nested = await inSandbox(t, 'unshare --user true 2>&1 || echo refused', { privileged: false, as: 65534 })
  t.match(nested, /refused/, 'no user namespace inside')
})

// Its autogroup's nice, and the nice of the shell and of a process it starts (stat's 19th field).
const PRIORITY = [
  'echo autogroup=$(sed "s/.* nice //" /proc/self/autogroup)',
  'echo nice=$(cut -d" " -f19 /proc/self/stat)',
  'sh -c \'echo child=$(cut -d" " -f19 /proc/self/stat)\'',
  'echo uid=$(id -u)',
  'grep -E "^(NoNewPrivs|CapEff):" /proc/self/status | tr -s "\\t" " "',
].join('; ')

t.test('lowest priority: the step and its children at nice 19 in an autogroup of nice 19', async (t) => {
  const ours = readFileSync('/proc/self/autogroup', 'utf8')
  for (const privileged of [true, false]) {
    const as = privileged ? {} : { as: SANDBOX_UID }
    const out = await inSandbox(t, PRIORITY, { privileged, lowestPriority: true, ...as })
    t.match(out, /autogroup=19\nnice=19\nchild=19\nuid=65534\n/, privileged ? 'as root' : 'as an unprivileged user')
    t.match(out, /CapEff: 0000000000000000\nNoNewPrivs: 1\n/, 'dropped as without it')
    const normal = await inSandbox(t, PRIORITY, { privileged, ...as })
    t.match(normal, /autogroup=0\nnice=0\nchild=0\n/, 'without it, the default')
  }
  t.equal(readFileSync('/proc/self/autogroup', 'utf8'), ours, "the builder's own autogroup untouched")
})

t.test('a step that uses its CPU time fails saying so; another failure does not', async (t) => {
  const dir = await workDir(t)
  const spec = hostSpec(dir, true, { ...limits, cpuSeconds: 1 })
  const run = (script: string): ReturnType<typeof runStep> =>
    runStep(
      sandboxedStep({ name: 'compile', command: 'sh', args: ['-c', script], cwd: dir }, spec),
      { timeoutMs: 60_000, maxOutputBytes: 10_000 },
      () => {},
    )
  const limit = "a process of the step used its 1 s of CPU time, the build step's limit"
  const spinning = await run('while :; do :; done')
  t.equal(spinning.reason, `compile failed (exit 152): ${limit}`, 'the step itself, ended by SIGXCPU')
  // As cargo reports a rustc the kernel ended.
  const child = await run(
    'sh -c "while :; do :; done"; echo "(signal: 24, SIGXCPU: CPU time limit exceeded)"; exit 101',
  )
  t.equal(child.reason, `compile failed (exit 101): ${limit}`, 'a child, as its parent reports it')
  const other = await run('echo broken; exit 3')
  t.equal(other.reason, 'compile failed (exit 3)')
})
