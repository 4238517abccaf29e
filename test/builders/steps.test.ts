// What the builder runs and reads, without building: the generated spin.toml read back, each
// language's commands (builder-go and builder-rust run them for real), the rust artifact path, the locked app, the reason picked from a build log,
// and the templates the control plane scaffolds.
import t from 'tap'
import { firstError } from '@session-relay/builders/build-app'
import { lockedAppOf } from '@session-relay/builders/locked-app'
import { buildSteps, rustArtifact } from '@session-relay/builders/languages'
import { runStep } from '@session-relay/builders/run-step'
import { parseSpinToml } from '@session-relay/builders/spin-toml'
import { templateFiles } from '@session-relay/spin/templates'
import { spinManifest } from '@session-relay/spin/manifest'

const toolchain = { node: '/usr/bin/node', bundleScript: '/b/js-bundle.js', j2w: '/b/j2w.js' }

t.test("the control plane's generated spin.toml reads back into routes and components", async (t) => {
  const text = spinManifest({ name: 'shop', language: 'ts' }, [
    { name: 'cart', route: '/cart/...' },
    { name: 'home', route: '/' },
  ])
  t.same(parseSpinToml(text), {
    name: 'shop',
    version: '0.1.0',
    triggers: [
      { route: '/cart/...', component: 'cart' },
      { route: '/', component: 'home' },
    ],
    components: [
      { id: 'cart', source: 'functions/cart/component.wasm', allowedOutboundHosts: [], workdir: 'functions/cart' },
      { id: 'home', source: 'functions/home/component.wasm', allowedOutboundHosts: [], workdir: 'functions/home' },
    ],
  })
  t.throws(
    () => parseSpinToml('spin_manifest_version = 2\n[application]\nname = "x"\nroute = \'/a\'\n'),
    /spin\.toml:4: the value is not a plain string/,
  )
  t.throws(() => parseSpinToml('spin_manifest_version = 1\n'), /spin_manifest_version must be 2/)
  t.throws(
    () =>
      parseSpinToml(
        'spin_manifest_version = 2\n[application]\nname = "x"\n[[trigger.http]]\nroute = "/"\ncomponent = "nope"\n',
      ),
    /names no component nope/,
  )
})

t.test("a go application's spin.toml names the WAGI executor on each trigger; the locked app carries it", async (t) => {
  const text = spinManifest({ name: 'shop', language: 'go' }, [
    { name: 'cart', route: '/cart/...' },
    { name: 'home', route: '/' },
  ])
  t.match(
    text,
    '[[trigger.http]]\nroute = "/cart/..."\ncomponent = "cart"\nexecutor = { type = "wagi" }\n',
    'as Spin reads it (spin up of the downloaded source)',
  )
  const manifest = parseSpinToml(text)
  t.same(manifest.triggers, [
    { route: '/cart/...', component: 'cart', executor: { type: 'wagi' } },
    { route: '/', component: 'home', executor: { type: 'wagi' } },
  ])
  t.same(
    lockedAppOf(manifest).triggers.map((trigger) => trigger.trigger_config),
    [
      { component: 'cart', route: '/cart/...', executor: { type: 'wagi' } },
      { component: 'home', route: '/', executor: { type: 'wagi' } },
    ],
  )
  for (const language of ['js', 'ts', 'rust'] as const) {
    const other = spinManifest({ name: 'shop', language }, [{ name: 'cart', route: '/cart/...' }])
    t.notMatch(other, 'executor', `${language}: a component, Spin's default executor`)
    t.same(lockedAppOf(parseSpinToml(other)).triggers[0]?.trigger_config, { component: 'cart', route: '/cart/...' })
  }
  const withExecutor = (line: string): string =>
    `spin_manifest_version = 2\n[application]\nname = "x"\n[[trigger.http]]\nroute = "/"\ncomponent = "c"\n${line}\n[component.c]\nsource = "c.wasm"\n`
  t.same(parseSpinToml(withExecutor('executor = {type="http"}')).triggers[0]?.executor, { type: 'http' })
  t.throws(() => parseSpinToml(withExecutor('executor = { type = "spin" }')), /trigger\.http #1: executor must be/)
  t.throws(
    () => parseSpinToml(withExecutor('executor = { type = "wagi", entrypoint = "main" }')),
    /trigger\.http #1: executor must be/,
  )
  t.throws(() => parseSpinToml(withExecutor('executor = "wagi"')), /trigger\.http #1: executor must be/)
  t.throws(
    () => parseSpinToml(withExecutor('executor = { type = wagi }')),
    /spin\.toml:7: not an inline table of the generated manifest/,
  )
  t.throws(
    () => parseSpinToml(withExecutor('executor = { type = "wagi" nested = { a = 1 } }')),
    /spin\.toml:7: not an inline table/,
  )
})

t.test("each language's build steps", async (t) => {
  t.same(
    buildSteps('ts', '/w/functions/f', { toolchain, entry: 'src/index.ts', displayPrefix: 'functions/f/' }).map(
      (step) => [step.command, ...step.args],
    ),
    [
      ['/usr/bin/node', '/b/js-bundle.js', 'src/index.ts', 'dist/bundle.js', 'functions/f/'],
      ['/usr/bin/node', '/b/j2w.js', '-i', 'dist/bundle.js', '-o', 'component.wasm'],
    ],
  )
  const deps = { cache: '/c', path: '/usr/bin' }
  const [tidy, go] = buildSteps('go', '/w/functions/f', { toolchain: null, entry: '', displayPrefix: '', deps })
  t.same(
    [go?.command, ...(go?.args ?? [])],
    ['go', 'build', '-trimpath', '-buildvcs=false', '-ldflags=-s -w', '-o', 'component.wasm', '.'],
  )
  t.match(
    go?.env,
    { GOOS: 'wasip1', GOARCH: 'wasm', GOPROXY: 'off', GOTOOLCHAIN: 'local', GOWORK: 'off', GOMODCACHE: '/c/go/mod' },
    'go compiles offline for wasip1 with the local toolchain, no workspace',
  )
  t.equal(go?.env?.GOFLAGS, '-mod=readonly -buildvcs=false', 'no version-control stamping, go.mod as tidy left it')
  t.equal(tidy?.env?.GOPROXY, 'https://proxy.golang.org', 'go mod tidy fetches from the module proxy only')
  t.same(tidy?.needs.fetchFrom, ['proxy.golang.org'])
  t.same(go?.needs.fetchFrom, [], 'the compile has no network')
  const [fetch, rust] = buildSteps('rust', '/w/functions/f', { toolchain: null, entry: '', displayPrefix: '', deps })
  t.same([fetch?.command, ...(fetch?.args ?? [])], ['cargo', 'fetch'])
  t.same(
    [rust?.command, ...(rust?.args ?? [])],
    ['cargo', 'build', '--release', '--offline', '--target', 'wasm32-wasip1', '--message-format', 'short'],
  )
  t.match(
    fetch?.env,
    { CARGO_BUILD_RUSTC: '/usr/bin/rustc', CARGO_BUILD_RUSTC_WRAPPER: '', RUSTC_WRAPPER: '', CARGO_HOME: '/c/cargo' },
    "cargo's own variables name the rustc it asks, whatever a configuration says",
  )
  t.same(
    rust?.needs,
    { fetchFrom: [], writesCache: ['target'], readsCache: ['cargo'] },
    'the compile only reads the cargo home',
  )
  t.same(fetch?.needs.fetchFrom, ['index.crates.io', 'static.crates.io'])
  t.throws(
    () => buildSteps('js', '/w', { toolchain: null, entry: 'src/index.js', displayPrefix: '' }),
    /js builds need the js toolchain/,
  )
  t.throws(
    () => buildSteps('rust', '/w', { toolchain: null, entry: '', displayPrefix: '' }),
    /rust builds need a dependency cache/,
  )
  t.equal(rustArtifact(templateFiles('rust', 'my-fn')['Cargo.toml'] as string), 'wasm32-wasip1/release/my_fn.wasm')
  t.throws(() => rustArtifact('[lib]\nname = "x"\n'), /no \[package\] name/)
})

t.test('the locked app names every trigger and component as Spin locks them', async (t) => {
  const manifest = {
    name: 'shop',
    version: '0.1.0',
    triggers: [{ route: '/cart/...', component: 'cart' }],
    components: [{ id: 'cart', source: 'functions/cart/component.wasm', allowedOutboundHosts: [], workdir: null }],
  }
  const app = lockedAppOf(manifest)
  t.same(app.triggers, [
    { id: 'cart-http-trigger', trigger_type: 'http', trigger_config: { component: 'cart', route: '/cart/...' } },
  ])
  t.same(app.components[0]?.metadata, { allowed_outbound_hosts: [] })
  t.equal(app.spin_lock_version, 1)
})

t.test('the failure reason is the first file:line error of the log', async (t) => {
  t.equal(
    firstError(
      '==> bundle\nfunctions/a/src/index.ts:3:7: error: Expected ";"\nfunctions/a/src/index.ts:9:1: error: later\n',
    ),
    'functions/a/src/index.ts:3:7: error: Expected ";"',
  )
  t.equal(firstError('nothing useful\n'), null)
  t.equal(
    firstError('# example.com/f\n./main.go:18:18: undefined: x\n', 'functions/f/'),
    'functions/f/main.go:18:18: undefined: x',
    'go: relative to the function',
  )
  t.equal(
    firstError(
      'src/lib.rs:1:5: warning: unused import\nsrc/lib.rs:9:17: error[E0425]: cannot find value `x`\n',
      'functions/f/',
    ),
    'functions/f/src/lib.rs:9:17: error[E0425]: cannot find value `x`',
    'rust: the error, not the warning before it',
  )
  t.equal(firstError('src/lib.rs:1:5: warning: unused import\n', 'functions/f/'), null, 'a warning is no reason')
})

t.test('a step that overruns its time or output is stopped with the reason', async (t) => {
  const log: string[] = []
  const slow = await runStep(
    { name: 'sleep', command: process.execPath, args: ['-e', 'setTimeout(() => {}, 60000)'], cwd: process.cwd() },
    { timeoutMs: 200, maxOutputBytes: 1000 },
    (text) => log.push(text),
  )
  t.same([slow.ok, slow.reason], [false, 'sleep took longer than 200 ms'])
  const loud = await runStep(
    {
      name: 'loud',
      command: process.execPath,
      args: ['-e', 'for (;;) process.stdout.write("x".repeat(4096))'],
      cwd: process.cwd(),
    },
    { timeoutMs: 20_000, maxOutputBytes: 10_000 },
    () => {},
  )
  t.same([loud.ok, loud.reason], [false, 'loud printed more than 10000 bytes'])
  const missing = await runStep(
    { name: 'tinygo', command: 'tinygo-that-does-not-exist', args: [], cwd: process.cwd() },
    { timeoutMs: 1000, maxOutputBytes: 1000 },
    () => {},
  )
  t.match(missing.reason, /^tinygo: cannot run tinygo-that-does-not-exist: spawn tinygo-that-does-not-exist ENOENT/)
})

t.test("templates carry the function's name and a dependency file per language", async (t) => {
  t.same(Object.keys(templateFiles('js', 'hello')), [
    'package.json',
    'src/index.js',
    'variables.toml',
    'wit/spin-variables.wit',
  ])
  t.same(Object.keys(templateFiles('ts', 'hello')), [
    'package.json',
    'src/index.ts',
    'src/spin-variables.d.ts',
    'tsconfig.json',
    'variables.toml',
    'wit/spin-variables.wit',
  ])
  t.same(Object.keys(templateFiles('go', 'hello')), ['go.mod', 'main.go'])
  t.same(Object.keys(templateFiles('rust', 'hello')), ['Cargo.toml', 'src/lib.rs'])
  for (const language of ['js', 'ts', 'go', 'rust'] as const) {
    const files = templateFiles(language, 'orders')
    const answer = language === 'js' || language === 'ts' ? '${greeting} from orders' : 'hello from orders'
    t.ok(
      Object.values(files).some((content) => content.includes(answer)),
      `${language}: the answer names the function`,
    )
    t.notOk(
      Object.values(files).some((content) => content.includes('{{function}}')),
      `${language}: no placeholder left`,
    )
  }
  t.equal(
    JSON.parse(templateFiles('js', 'orders')['package.json'] as string).dependencies['@spinframework/wasi-http-proxy'],
    '1.0.1',
  )
})

t.test(
  "the js and ts templates read the greeting variable through Spin's variables world, declared beside them",
  async (t) => {
    for (const language of ['js', 'ts'] as const) {
      const files = templateFiles(language, 'orders')
      const pkg = JSON.parse(files['package.json'] as string) as { config: { witDependencies: unknown } }
      t.same(
        pkg.config.witDependencies,
        [{ witPath: './wit', package: 'fermyon:spin@2.0.0', world: 'spin-variables' }],
        `${language}: build-tools reads the world from package.json`,
      )
      t.match(files['wit/spin-variables.wit'], /^package fermyon:spin@2\.0\.0;$/m)
      t.match(files['wit/spin-variables.wit'], /get: func\(name: string\) -> result<string, error>;/)
      t.match(files[`src/index.${language}`], /import \{ get \} from 'fermyon:spin\/variables@2\.0\.0'/)
      t.match(files[`src/index.${language}`], /get\('greeting'\)/)
      t.match(files['variables.toml'], /^greeting = \{ default = "hello" \}$/m, `${language}: hello when it is not set`)
    }
  },
)
