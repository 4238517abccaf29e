// The relay inside its image's root on the image's Node 24: its test files, and on this host
// the refusal on a glibc older than 2.38.
import { execFileSync, spawn } from 'node:child_process'
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { basename, join, relative } from 'node:path'
import { NODE_VERSION } from './image-base.js'
import type { UndoStack } from './image-host.js'
import { cacheDir, repo } from './image-paths.js'
import { check, log } from './image-report.js'
import { bindInto, imageEnv, startInRoot } from './image-root.js'
import type { ImageConfig, ImageRoot } from './image-root.js'
import { withTimeout } from './image-running.js'

const SUITE_TIMEOUT_MS = 15 * 60_000

// The relay's test files, run by tap on the image's node as root in the image's root, with
// this checkout (its node_modules hold every uWebSockets.js binary; dist/ is built) bound at
// /tmp/src. tap starts each file with its own process.execPath: Node 24 throughout.
export async function relaySuiteInRoot(root: ImageRoot, config: ImageConfig, undo: UndoStack): Promise<void> {
  const inside = '/tmp/src'
  bindInto(root, repo, inside, undo)
  // tap keeps its results and coverage under the project's .tap/: a directory of its own here,
  // so this run leaves the suite's (which may be running beside it) as they were.
  const scratch = join(cacheDir, 'relay-tap')
  rmSync(scratch, { recursive: true, force: true })
  mkdirSync(scratch, { recursive: true })
  bindInto(root, scratch, `${inside}/.tap`, undo)
  // test/common minus what needs a host program the root lacks and the relay never runs:
  // the browser helper (Chromium) and the Spin artifact code (a docker-registry), which are
  // the console's and the builders' and run in `npm test`.
  const hostOnly = /^(browser|spin-[\w-]+)\.test\.ts$/
  const files = ['test/relay', 'test/common'].flatMap((dir) =>
    readdirSync(join(repo, dir))
      .filter((file) => file.endsWith('.test.ts') && !(dir === 'test/common' && hostOnly.test(file)))
      .map((file) => `${dir}/${file}`),
  )
  lendOpenssl(root)
  const env = imageEnv(config, {
    NODE_ENV: 'test',
    HOME: '/tmp',
    PATH: `${TOOLS}/bin:/usr/local/bin:/usr/bin:/bin`,
    OPENSSL_CONF: `${TOOLS}/openssl.cnf`,
    CI: 'true',
  })
  const suite = startInRoot(
    root,
    { ...config, workingDir: inside },
    { uid: 0, gid: 0 },
    ['node', '-e', 'console.log(`# node ${process.version}`)'],
    env,
    undo,
  )
  const version = await withTimeout(suite.exited, 30_000, 'node --version in the root')
  const shown = suite.stdout().trim()
  check(
    version.code === 0 && shown === `# node v${NODE_VERSION}`,
    `relay root: node is v${NODE_VERSION}`,
    shown + suite.stderr(),
  )
  const tap = startInRoot(
    root,
    { ...config, workingDir: inside },
    { uid: 0, gid: 0 },
    ['node', 'node_modules/tap/dist/esm/run.mjs', '-j2', '--reporter=terse', ...files],
    env,
    undo,
  )
  const exit = await withTimeout(tap.exited, SUITE_TIMEOUT_MS, "the relay's tests in the image root")
  const output = tap.stdout() + tap.stderr()
  writeFileSync(join(cacheDir, 'logs', 'relay-tests-node24.log'), output)
  check(
    exit.code === 0,
    `relay: its ${files.length} test files pass on Node ${NODE_VERSION} in the image's root`,
    `exit ${exit.code}; see ${relative(repo, join(cacheDir, 'logs', 'relay-tests-node24.log'))}: ${output.slice(-1_500)}`,
  )
}

// The TLS tests make their certificate with the openssl CLI, which a slim image rightly lacks:
// the host's is lent for the test run, with the libraries it links beside it (the root's glibc
// is newer than the host's, so the host's binary runs there), in the root's scratch /tmp.
const TOOLS = '/tmp/tools'
function lendOpenssl(root: ImageRoot): void {
  const tools = join(root.dir, TOOLS)
  mkdirSync(join(tools, 'bin'), { recursive: true })
  mkdirSync(join(tools, 'lib'), { recursive: true })
  const openssl = runSyncText('sh', ['-c', 'command -v openssl']).trim()
  copyFileSync(openssl, join(tools, 'lib', 'openssl'))
  chmodSync(join(tools, 'lib', 'openssl'), 0o755)
  for (const line of runSyncText('ldd', [openssl]).split('\n')) {
    const library = /=>\s+(\S+\/(?:libssl|libcrypto|libz)[^\s/]*)\s/.exec(line)?.[1]
    if (library !== undefined) copyFileSync(library, join(tools, 'lib', basename(library)))
  }
  const conf = ['/usr/lib/ssl/openssl.cnf', '/etc/ssl/openssl.cnf'].find((file) => existsSync(file))
  writeFileSync(join(tools, 'openssl.cnf'), conf === undefined ? '' : readFileSync(conf))
  writeFileSync(
    join(tools, 'bin', 'openssl'),
    `#!/bin/sh\nLD_LIBRARY_PATH=${TOOLS}/lib exec ${TOOLS}/lib/openssl "$@"\n`,
    { mode: 0o755 },
  )
}

function runSyncText(command: string, args: string[]): string {
  return execFileSync(command, args, { encoding: 'utf8' })
}

// The image's Node 24 on this host: its uWebSockets.js binary needs glibc 2.38. Where the host
// has less, the relay must refuse as docs/relay.md says: exit 2, one line, the image named.
export async function refusalOnThisHost(root: ImageRoot): Promise<void> {
  const glibc = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header
    ?.glibcVersionRuntime
  const [major = 0, minor = 0] = (glibc ?? '0.0').split('.').map(Number)
  if (glibc === undefined || major > 2 || minor >= 38) {
    log(`relay on this host's glibc ${glibc ?? 'none'} with Node 24: loads, no refusal to check`)
    return
  }
  const node24 = join(root.dir, 'usr', 'local', 'bin', 'node')
  const result = await runCapture(node24, [
    join(repo, 'relay', 'dist', 'main.js'),
    '--no-auth',
    '--addr',
    '127.0.0.1:0',
  ])
  const lines = result.stderr.split('\n').filter((line) => line !== '')
  check(
    result.code === 2 &&
      lines.length === 1 &&
      lines[0]!.includes('needs glibc 2.38') &&
      lines[0]!.includes(`this host has glibc ${glibc}`) &&
      lines[0]!.includes('relay image'),
    `relay on this host (glibc ${glibc}) with Node ${NODE_VERSION}: exit 2, one line naming glibc 2.38 and the image`,
    { code: result.code, stderr: result.stderr.slice(0, 500) },
  )
}

function runCapture(command: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, stderr }))
  })
}
