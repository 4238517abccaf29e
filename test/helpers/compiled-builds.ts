// What the go and rust builder tests share: the template built by the builder program (a
// child process, configured as the local runtime configures it), pushed to a real registry,
// the artifact read back field by field against the Spin OCI format, then loaded into the
// wasmtime worker and invoked.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import type { ImageConfig, ImageManifest, LockedApp } from '@session-relay/spin/format'
import { startRegistry } from './registry.js'
import type { BuilderRun } from './spin-processes.js'
import { runBuilder, sourceArchive } from './spin-processes.js'
import { startWorker } from './worker.js'

type Built = { manifest: ImageManifest; config: ImageConfig; lock: LockedApp; wasm: Buffer }

/** Builds `files` as function `hello` of application `demo` and reads the pushed artifact back (null when the build failed). */
export async function buildAndRead(
  t: Test,
  language: 'js' | 'go' | 'rust',
  files: Record<string, string>,
  env: Record<string, string>,
): Promise<{ build: BuilderRun; built: Built | null }> {
  const registry = await startRegistry(t)
  const archive = await sourceArchive(t, { name: 'demo', language }, [{ name: 'hello', route: '/hello/...', files }])
  const build = await runBuilder(t, {
    SOURCE_ARCHIVE: archive,
    IMAGE_REF: `${registry.host}/apps/demo:b1`,
    APPLICATION: 'demo',
    LANGUAGE: language,
    BUILD_ID: 'b1',
    ...env,
  })
  if (build.code !== 0) return { build, built: null }
  const digest = build.termination.slice(build.termination.indexOf('@') + 1)
  const get = async (path: string): Promise<Response> =>
    await fetch(`${registry.url}/v2/apps/demo/${path}`, {
      headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
    })
  const manifest = (await (await get(`manifests/${digest}`)).json()) as ImageManifest
  const config = (await (await get(`blobs/${manifest.config.digest}`)).json()) as ImageConfig
  const lock = (await (await get(`blobs/${manifest.layers[1]!.digest}`)).json()) as LockedApp
  const wasm = Buffer.from(await (await get(`blobs/${manifest.layers[0]!.digest}`)).arrayBuffer())
  return { build, built: { manifest, config, lock, wasm } }
}

/** The Spin OCI format, field by field, as containerd-shim-spin reads it (docs/spin-artifacts.md). */
export function checkSpinFormat(t: Test, built: Built, executor: Record<string, unknown> | null): void {
  const { manifest, config, lock } = built
  t.equal(manifest.mediaType, 'application/vnd.oci.image.manifest.v1+json')
  t.equal(manifest.config.mediaType, 'application/vnd.oci.image.config.v1+json')
  t.same(
    manifest.layers.map((layer) => layer.mediaType),
    ['application/vnd.wasm.content.layer.v1+wasm', 'application/vnd.fermyon.spin.application.v1+config'],
  )
  t.equal(config.architecture, 'wasm')
  t.equal(config.os, 'wasip1')
  t.equal(config.config.Labels['com.fermyon.spin.lockedAppDigest'], manifest.layers[1]!.digest)
  t.equal(lock.spin_lock_version, 1)
  t.same(lock.triggers, [
    {
      id: 'hello-http-trigger',
      trigger_type: 'http',
      trigger_config: { component: 'hello', route: '/hello/...', ...(executor === null ? {} : { executor }) },
    },
  ])
  t.same(lock.components, [
    {
      id: 'hello',
      metadata: { allowed_outbound_hosts: [] },
      source: { content_type: 'application/wasm', digest: manifest.layers[0]!.digest },
    },
  ])
  t.equal(built.wasm.length, manifest.layers[0]!.size)
}

/** Loads the artifact into a worker and answers GET `path` through it. */
export async function invokeThroughWorker(
  t: Test,
  built: Built,
  path: string,
): Promise<{ status: number; text: string; headers: Headers; log: () => string }> {
  const dir = await mkdtemp(join(tmpdir(), 'worker-app-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const wasmPath = join(dir, 'hello.wasm')
  await writeFile(wasmPath, built.wasm)
  const worker = await startWorker(t)
  const reply = await worker.send({ op: 'load', app: 'demo', lock: built.lock, components: { hello: wasmPath } })
  if (reply.ok !== true) throw new Error(`the worker refused the app: ${JSON.stringify(reply)}\n${worker.log()}`)
  const response = await fetch(`${reply.url as string}${path}`)
  return { status: response.status, text: await response.text(), headers: response.headers, log: worker.log }
}
