// Every way a build fails before or after its compiler, each with the one reason the
// termination log will carry (builders/README.md: a BuildFailure's message is the reason).
// No real toolchain runs: go and rust builds run stand-in `go` and `cargo` programs put
// first on PATH (rust with RUST_ROOT "/", the image's way: cargo runs directly), which do what the test needs (write the component, write nothing, print a
// compiler error and fail), so the builder's own handling is what is tested.
import { execFile } from 'node:child_process'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import type { Test } from 'tap'
import { buildApplication } from '@session-relay/builders/build-app'
import type { BuildRequest } from '@session-relay/builders/build-app'
import type { Language } from '@session-relay/builders/languages'
import { parseRef } from '@session-relay/spin/ref'
import { layoutStore } from '@session-relay/spin/layout'
import { packArchive } from '@session-relay/spin/source/archive'
import { spinManifest } from '@session-relay/spin/manifest'
import { BUILDER, childEnv, runBuilder } from '../helpers/spin-processes.js'

t.setTimeout(120_000)

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'build-failures-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

// Stand-ins for the toolchains, switched by the word in the file \`mode\` beside them (go and
// cargo run with an environment of their own, not the builder's): "ok" writes the artifact, "nothing"
// exits 0 and writes none, "error" prints a compiler error and exits 1.
const STANDIN = `#!/bin/sh
case "$(cat "$(dirname "$0")/mode")" in
  ok) if [ "$(basename "$0")" = cargo ]; then mkdir -p "$CARGO_TARGET_DIR/wasm32-wasip1/release" && printf 'rust wasm' > "$CARGO_TARGET_DIR/wasm32-wasip1/release/my_fn.wasm"; elif [ "$1" = build ]; then printf 'go wasm' > component.wasm; fi ;;
  nothing) ;;
  error) echo "./main.go:3:7: undefined: handler" >&2; echo "more detail" >&2; exit 1 ;;
esac
`
const bin = await mkdtemp(join(tmpdir(), 'build-failures-bin-'))
t.teardown(() => rm(bin, { recursive: true, force: true }))
for (const name of ['go', 'cargo']) {
  await writeFile(join(bin, name), STANDIN)
  await chmod(join(bin, name), 0o755)
}
process.env.PATH = `${bin}:${process.env.PATH ?? ''}`

async function mode(t: Test, value: string): Promise<void> {
  await writeFile(join(bin, 'mode'), value)
  t.teardown(() => writeFile(join(bin, 'mode'), ''))
}

async function archive(t: Test, files: Record<string, string>): Promise<string> {
  const path = join(await tempDir(t), 'source.tar.gz')
  await writeFile(path, await packArchive(files, new Date(0)))
  return path
}

function appFiles(language: Language, functionFiles: Record<string, string>): Record<string, string> {
  const files: Record<string, string> = {
    'spin.toml': spinManifest({ name: 'shop', language }, [{ name: 'f', route: '/...' }]),
  }
  for (const [path, content] of Object.entries(functionFiles)) files[`functions/f/${path}`] = content
  return files
}

async function build(t: Test, language: Language, archivePath: string, ref?: string): Promise<string> {
  const workDir = await tempDir(t)
  const request: BuildRequest = {
    archive: archivePath,
    ref: parseRef(ref ?? `oci-layout:${join(workDir, 'out')}:b1`),
    language,
    application: 'shop',
    buildId: 'b1',
    dockerConfigDir: null,
    insecureRegistry: false,
    workDir: join(workDir, 'work'),
    dependencyCache: join(workDir, 'deps'),
    preinitializer: null,
    rustRoot: '/',
    limits: { timeoutMs: 60_000, maxOutputBytes: 100_000 },
    // As in an image (the pod is the sandbox): the stand-ins above run as they are, from PATH.
    sandbox: 'pod',
    sandboxLimits: {
      cpuSeconds: 60,
      addressSpaceBytes: 128 * 1024 ** 3,
      fileSizeBytes: 1024 ** 3,
      processes: 512,
      tmpBytes: 64 * 1024 ** 2,
      lowestPriority: false,
    },
    log: () => {},
  }
  await mkdir(request.workDir)
  return buildApplication(request)
}

t.test('an archive that cannot be read', async (t) => {
  const dir = await tempDir(t)
  await t.rejects(build(t, 'go', join(dir, 'missing.tar.gz')), {
    message: `cannot read the source archive: ENOENT: no such file or directory, access '${dir}/missing.tar.gz'`,
  })
  await writeFile(join(dir, 'garbage.tar.gz'), 'not gzip at all')
  await t.rejects(build(t, 'go', join(dir, 'garbage.tar.gz')), {
    message: 'cannot read the source archive: not a valid gzip file: incorrect header check',
  })
})

t.test('a manifest the builder cannot build from', async (t) => {
  await t.rejects(build(t, 'go', await archive(t, { 'functions/f/main.go': 'package main' })), {
    message: 'the source archive has no spin.toml',
  })
  await t.rejects(
    build(t, 'go', await archive(t, { 'spin.toml': 'spin_manifest_version = 2\n[application]\nversion = "1"\n' })),
    { message: 'spin.toml: [application] needs a name' },
  )
  await t.rejects(
    build(t, 'go', await archive(t, { 'spin.toml': 'spin_manifest_version = 2\n[application]\nname = "shop"\n' })),
    { message: 'the application has no functions' },
  )
})

t.test('a js or ts function the builder refuses before bundling', async (t) => {
  const dependency = JSON.stringify({ dependencies: { '@spinframework/wasi-http-proxy': '1.0.1' } })
  await t.rejects(
    build(t, 'ts', await archive(t, appFiles('ts', { 'package.json': dependency, 'src/index.js': '' }))),
    { message: 'functions/f/: no entry file (src/index.ts or index.ts)' },
  )
  await t.rejects(build(t, 'js', await archive(t, appFiles('js', { 'index.js': '' }))), {
    message: 'functions/f/package.json: missing (it must depend on @spinframework/wasi-http-proxy)',
  })
  await t.rejects(
    build(t, 'js', await archive(t, appFiles('js', { 'index.js': '', 'package.json': '{"dependencies":' }))),
    { message: 'functions/f/package.json: not valid JSON (it must depend on @spinframework/wasi-http-proxy)' },
  )
  await t.rejects(
    build(
      t,
      'js',
      await archive(
        t,
        appFiles('js', {
          'index.js': '',
          'package.json': JSON.stringify({
            dependencies: { '@spinframework/wasi-http-proxy': '1.0.1', 'left-pad': '1.3.0' },
          }),
        }),
      ),
    ),
    {
      message:
        'functions/f/package.json: left-pad is not available in the builder (builds are offline; it carries @spinframework/build-tools and @spinframework/wasi-http-proxy)',
    },
  )
})

t.test('a compiler that fails gives its first file:line error as the reason', async (t) => {
  await mode(t, 'error')
  await t.rejects(build(t, 'go', await archive(t, appFiles('go', { 'main.go': 'package main' }))), {
    message: 'function f: functions/f/main.go:3:7: undefined: handler',
  })
})

t.test('a compiler that succeeds without writing the component', async (t) => {
  await mode(t, 'nothing')
  await t.rejects(build(t, 'go', await archive(t, appFiles('go', { 'main.go': 'package main' }))), {
    message: 'function f: the build left no component.wasm',
  })
})

t.test(
  "a go build's module is the layer, a rust crate's module goes to componentize, and a push that fails says so",
  async (t) => {
    await mode(t, 'ok')
    const out = join(await tempDir(t), 'out')
    const pinned = await build(
      t,
      'go',
      await archive(t, appFiles('go', { 'main.go': 'package main' })),
      `oci-layout:${out}:b1`,
    )
    t.match(pinned, new RegExp(`^oci-layout:${out}@sha256:[0-9a-f]{64}$`))
    const manifest = JSON.parse((await layoutStore(out).getManifest('b1')).bytes.toString('utf8')) as {
      layers: Array<{ size: number }>
    }
    t.equal(manifest.layers[0]?.size, 'go wasm'.length, 'the module is the layer')
    const files = appFiles('rust', { 'Cargo.toml': '[package]\nname = "my-fn"\nversion = "0.1.0"\n', 'src/lib.rs': '' })
    // The stand-in's bytes are no wasm module: componentize reads the crate's artifact and says so.
    await t.rejects(build(t, 'rust', await archive(t, files)), { message: /^function f: componentize: / })

    const registry = http.createServer((request, response) => {
      request.resume()
      response.writeHead(500).end('disk full')
    })
    t.teardown(
      () =>
        new Promise<void>((resolve) => {
          registry.closeAllConnections()
          registry.close(() => resolve())
        }),
    )
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve))
    const host = `127.0.0.1:${(registry.address() as AddressInfo).port}`
    await t.rejects(
      build(t, 'go', await archive(t, appFiles('go', { 'main.go': 'package main' })), `${host}/apps/shop:b1`),
      { message: new RegExp(`^push failed: checking blob sha256:[0-9a-f]{64}: ${host} answered 500$`) },
    )
  },
)

t.test('the process: --help, and a termination log it cannot write', async (t) => {
  const help = await promisify(execFile)(process.execPath, [BUILDER, '--help'], { env: childEnv({}) })
  t.match(help.stdout, /^Usage: node builders\/dist\/main\.js .*--termination-log/s, 'exit 0 with the usage')
  const dir = await tempDir(t)
  const run = await runBuilder(t, {
    TERMINATION_LOG: join(dir, 'no-such-dir', 'termination-log'),
    IMAGE_REF: 'not a ref',
    SOURCE_ARCHIVE: '/x.tar.gz',
    APPLICATION: 'a',
    LANGUAGE: 'go',
    BUILD_ID: 'b1',
  })
  t.equal(run.code, 2, 'the settings error decides the exit code')
  t.match(run.log, `cannot write the termination log ${join(dir, 'no-such-dir', 'termination-log')}: ENOENT`)
})
