// The worker's probe function (worker/tests/fixtures/probe: a js component whose path says what
// to do, reading fermyon:spin/variables), built as the js builder builds it when missing, and
// one directory of compiled components every test's worker shares: the probe compiles once per
// machine (7-25 s), not once per test.
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pushSpinApp } from '@session-relay/spin/artifact'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'

const root = fileURLToPath(new URL('../../', import.meta.url))
const fixtures = join(root, 'worker', 'tests', 'fixtures')
export const PROBE_WASM = join(fixtures, 'probe', 'component.wasm')
/** Compiled components shared by the tests' workers (PLATFORM_LOCAL_CACHE_DIR). */
export const SHARED_COMPILED = join(root, '.cache', 'worker', 'test-compiled')

/** The probe's wasm, built first when it is missing or older than its source. */
export function probeWasm(): Buffer {
  const source = join(fixtures, 'probe', 'src', 'index.js')
  if (!existsSync(PROBE_WASM) || statSync(PROBE_WASM).mtimeMs < statSync(source).mtimeMs) {
    execFileSync(process.execPath, [join(fixtures, 'build-probe.mjs')], { stdio: 'ignore' })
  }
  mkdirSync(SHARED_COMPILED, { recursive: true })
  return readFileSync(PROBE_WASM)
}

/** The probe as a Spin application routed at /..., pushed to `image` (oci-layout:DIR:TAG); its digest-pinned reference. */
export async function pushProbe(image: string, lock: { allowedOutboundHosts?: string[] } = {}): Promise<string> {
  const ref = parseRef(image)
  const store = await openStore(ref, { dockerConfigDir: null })
  const metadata =
    lock.allowedOutboundHosts === undefined ? {} : { metadata: { allowed_outbound_hosts: lock.allowedOutboundHosts } }
  const pushed = await pushSpinApp(store, ref.tag ?? 'latest', {
    lockedApp: {
      spin_lock_version: 1,
      triggers: [
        { id: 'probe-http-trigger', trigger_type: 'http', trigger_config: { component: 'probe', route: '/...' } },
      ],
      components: [{ id: 'probe', source: { content_type: 'application/wasm' }, ...metadata }],
    },
    wasm: new Map([['probe', probeWasm()]]),
  })
  return image.replace(/:[^:/]+$/, '') + '@' + pushed.digest
}

/** The worker binary the local runtime uses (scripts/build-worker.sh makes it). */
export const WORKER_BIN = join(root, '.cache', 'worker', 'target', 'release', 'worker')

/** A compiled-components directory of its own (a test that prunes it), filled from the shared one so nothing compiles again. */
export function ownCompiledDir(dir: string): string {
  mkdirSync(dir, { recursive: true })
  // The first test of a fresh checkout finds nothing compiled yet: its worker compiles.
  mkdirSync(SHARED_COMPILED, { recursive: true })
  for (const name of readdirSync(SHARED_COMPILED)) {
    if (name.endsWith('.cwasm')) copyFileSync(join(SHARED_COMPILED, name), join(dir, name))
  }
  return dir
}
