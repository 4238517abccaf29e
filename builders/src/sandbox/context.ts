// What a build's sandbox needs prepared on the builder's side before its first step: a private
// directory for the passwd file and the fetch proxy's socket, the toolchain's directories found,
// and (when the builder is root and the steps run as 65534) ownership of what they may write.
import { chmod, chown, lchown, lstat, mkdir, mkdtemp, readdir, realpath, rm, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import type { Bind, SandboxLimits } from './bwrap.js'
import { SANDBOX_UID } from './bwrap.js'
import type { SandboxContext, SandboxMode } from './policy.js'

const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'

export type SandboxSetup = {
  mode: SandboxMode
  language: 'js' | 'ts' | 'go' | 'rust'
  workDir: string
  cache: string
  rustRoot: string
  builderDir: string
  /** js and ts: the builder's node_modules (the go and rust images carry no js toolchain). */
  nodeModules: string | null
  /** js, ts: the pre-initializer's binds over componentize-js's tools (js-preinit.ts), or none. */
  preinit: Bind[]
  limits: SandboxLimits
}

/** The context every step of this build is confined with; `dispose` removes its private directory. */
export async function prepareSandbox(setup: SandboxSetup): Promise<SandboxContext & { dispose(): Promise<void> }> {
  const privileged = process.getuid?.() === 0
  const aux = await mkdtemp(join(tmpdir(), 'build-sandbox-'))
  const passwd = join(aux, 'passwd')
  // wasmtime (inside j2w) finds its cache through the user's passwd entry, not HOME: js keeps it
  // in the application's own cache, as its steps' HOME says (languages.ts).
  const home = setup.language === 'js' || setup.language === 'ts' ? join(setup.cache, 'home') : '/tmp'
  await writeFile(passwd, `nobody:x:${SANDBOX_UID}:${SANDBOX_UID}:nobody:${home}:/usr/sbin/nologin\n`)
  // Readable by 65534 whatever the umask: under the control plane's (077) the file was root's
  // alone, the lookup failed and wizer put its cache in /.cache, where it cannot write.
  await chmod(passwd, 0o644)
  return {
    mode: setup.mode,
    privileged,
    limits: setup.limits,
    workDir: setup.workDir,
    cache: setup.cache,
    builderDir: setup.builderDir,
    nodeModules: setup.nodeModules === null ? null : await realpath(setup.nodeModules),
    preinit: setup.preinit,
    node: await realpath(process.execPath),
    goRoot: setup.language === 'go' && setup.mode === 'bwrap' ? await goRoot() : null,
    rustRoot: setup.language === 'rust' ? await realpath(setup.rustRoot).catch(() => setup.rustRoot) : null,
    passwd,
    proxySocket: join(aux, 'fetch.sock'),
    caBundle: existsSync(CA_BUNDLE) ? CA_BUNDLE : null,
    async dispose() {
      await rm(aux, { recursive: true, force: true })
    },
  }
}

/** GOROOT of the `go` on PATH: the directory above its bin/. */
async function goRoot(): Promise<string> {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '' || !existsSync(join(dir, 'go'))) continue
    return dirname(dirname(await realpath(join(dir, 'go'))))
  }
  throw new Error('go is not on PATH')
}

/** Makes the cache's directories and, for a root builder, gives them and the function's copy to uid 65534. */
export async function ownForSandbox(context: SandboxContext, functionDir: string, cacheDirs: string[]): Promise<void> {
  for (const sub of cacheDirs) await mkdir(join(context.cache, sub), { recursive: true })
  if (context.mode !== 'bwrap' || !context.privileged) return
  for (const sub of cacheDirs) await chownTop(join(context.cache, sub))
  await chownTree(functionDir)
}

// A cache kept from an earlier build already belongs to 65534 with all it holds; one a build
// before the sandbox wrote (as root) is given over whole, once.
async function chownTop(dir: string): Promise<void> {
  if ((await lstat(dir)).uid !== SANDBOX_UID) await chownTree(dir)
}

async function chownTree(dir: string): Promise<void> {
  await chown(dir, SANDBOX_UID, SANDBOX_UID)
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) await chownTree(path)
    else await lchown(path, SANDBOX_UID, SANDBOX_UID)
  }
}
