// The Spin OCI artifact against a real distribution registry on loopback and an image-layout
// directory: the manifest as `spin registry push` makes it, blobs the registry has are not
// sent again, htpasswd credentials from a Docker config.json, pulls verified by digest.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Descriptor, ImageConfig, ImageManifest, LockedApp } from '@session-relay/spin/format'
import { pullSpinApp, pushSpinApp } from '@session-relay/spin/artifact'
import type { SpinApplication } from '@session-relay/spin/artifact'
import { sha256Digest } from '@session-relay/spin/digest'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import { dockerConfigDir, startRegistry } from '../helpers/registry.js'

function app(wasmText: string): SpinApplication {
  return {
    lockedApp: {
      spin_lock_version: 1,
      metadata: { name: 'demo', version: '0.1.0', origin: 'file:///tmp/spin.toml' },
      triggers: [
        { id: 'hello-http-trigger', trigger_type: 'http', trigger_config: { component: 'hello', route: '/hello/...' } },
      ],
      components: [
        {
          id: 'hello',
          metadata: { allowed_outbound_hosts: [] },
          source: { content_type: 'application/wasm', source: 'file:///tmp/hello.wasm' },
        },
      ],
    },
    wasm: new Map([['hello', Buffer.from(wasmText)]]),
  }
}

t.test('a push to the registry is the Spin format, field by field, and pulls back verified', async (t) => {
  const registry = await startRegistry(t)
  const ref = parseRef(`${registry.host}/apps/demo:b1`)
  const store = await openStore(ref, { dockerConfigDir: null })
  const wasm = '\0asm fake component'
  const pushed = await pushSpinApp(store, 'b1', app(wasm))
  t.equal(pushed.pushedBlobs, 3, 'the wasm layer, the locked app layer and the config')

  const manifestResponse = await fetch(`${registry.url}/v2/apps/demo/manifests/b1`, {
    headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
  })
  t.equal(manifestResponse.headers.get('docker-content-digest'), pushed.digest)
  const manifest = (await manifestResponse.json()) as ImageManifest
  t.equal(manifest.schemaVersion, 2)
  t.equal(manifest.mediaType, 'application/vnd.oci.image.manifest.v1+json')
  t.equal(manifest.config.mediaType, 'application/vnd.oci.image.config.v1+json')
  t.same(
    manifest.layers.map((layer) => layer.mediaType),
    ['application/vnd.wasm.content.layer.v1+wasm', 'application/vnd.fermyon.spin.application.v1+config'],
  )
  t.equal(manifest.layers[0]!.digest, sha256Digest(Buffer.from(wasm)))
  t.equal(manifest.layers[0]!.size, Buffer.byteLength(wasm))

  const config = (await (
    await fetch(`${registry.url}/v2/apps/demo/blobs/${manifest.config.digest}`)
  ).json()) as ImageConfig
  t.equal(config.architecture, 'wasm')
  t.equal(config.os, 'wasip1')
  t.same(config.rootfs, { type: 'layers', diff_ids: [] })
  t.same(config.config.Labels, { 'com.fermyon.spin.lockedAppDigest': manifest.layers[1]!.digest })

  const lock = (await (
    await fetch(`${registry.url}/v2/apps/demo/blobs/${manifest.layers[1]!.digest}`)
  ).json()) as LockedApp
  t.equal(lock.spin_lock_version, 1)
  t.same(lock.metadata, { name: 'demo', version: '0.1.0' }, 'the local origin is dropped, as Spin does')
  t.same(lock.triggers, [
    { id: 'hello-http-trigger', trigger_type: 'http', trigger_config: { component: 'hello', route: '/hello/...' } },
  ])
  t.same(lock.components, [
    {
      id: 'hello',
      metadata: { allowed_outbound_hosts: [] },
      source: { content_type: 'application/wasm', digest: manifest.layers[0]!.digest },
    },
  ])

  const again = await pushSpinApp(store, 'b2', app(wasm))
  t.equal(again.pushedBlobs, 0, 'every blob is skipped after a HEAD')
  t.equal(again.digest, pushed.digest)

  const pulled = await pullSpinApp(
    await openStore(parseRef(`${registry.host}/apps/demo@${pushed.digest}`), { dockerConfigDir: null }),
    pushed.digest,
  )
  t.equal(pulled.digest, pushed.digest)
  t.equal(pulled.wasm.get(manifest.layers[0]!.digest)?.toString(), wasm)
})

t.test(
  'htpasswd credentials come from DOCKER_CONFIG; without them the push names the missing credentials',
  async (t) => {
    const registry = await startRegistry(t, { auth: true })
    const ref = parseRef(`${registry.host}/apps/private:v1`)
    const anonymous = await openStore(ref, { dockerConfigDir: null })
    await t.rejects(pushSpinApp(anonymous, 'v1', app('x')), {
      message: `${registry.host} needs credentials and DOCKER_CONFIG has none for it`,
    })
    const wrongDir = await dockerConfigDir(t, registry.host, { username: 'builder', password: 'wrong' })
    await t.rejects(pushSpinApp(await openStore(ref, { dockerConfigDir: wrongDir }), 'v1', app('x')), {
      message: `${registry.host} refused the credentials (401)`,
    })
    const dir = await dockerConfigDir(t, registry.host, registry.credentials!)
    const store = await openStore(ref, { dockerConfigDir: dir })
    const pushed = await pushSpinApp(store, 'v1', app('private wasm'))
    const pulled = await pullSpinApp(store, 'v1')
    t.equal(pulled.digest, pushed.digest)
  },
)

t.test('an image-layout directory round-trips, and a changed blob is refused on pull', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'layout-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const store = await openStore(parseRef(`oci-layout:${dir}:v1`), { dockerConfigDir: null })
  const pushed = await pushSpinApp(store, 'v1', app('layout wasm'))
  const index = JSON.parse(await readFile(join(dir, 'index.json'), 'utf8')) as { manifests: Descriptor[] }
  t.same(
    index.manifests.map((entry: Descriptor) => [
      entry.digest,
      entry.annotations?.['org.opencontainers.image.ref.name'],
    ]),
    [[pushed.digest, 'v1']],
  )
  t.same(JSON.parse(await readFile(join(dir, 'oci-layout'), 'utf8')), { imageLayoutVersion: '1.0.0' })
  await pushSpinApp(store, 'v1', app('layout wasm, second build'))
  const retagged = JSON.parse(await readFile(join(dir, 'index.json'), 'utf8')) as { manifests: Descriptor[] }
  t.equal(retagged.manifests.length, 1, 'the tag moves to the new manifest')

  const pulled = await pullSpinApp(store, pushed.digest)
  t.same(
    pulled.lockedApp.components.map((c) => c.id),
    ['hello'],
  )
  const wasmDigest = sha256Digest(Buffer.from('layout wasm'))
  await writeFile(join(dir, 'blobs', 'sha256', wasmDigest.slice(7)), 'tampered')
  await t.rejects(pullSpinApp(store, pushed.digest), {
    message: new RegExp(`blob ${wasmDigest}: content does not match its digest`),
  })
  t.notOk(
    (await readdir(join(dir, 'blobs', 'sha256'))).some((name) => name.endsWith('.tmp')),
    'no temporary file is left behind',
  )
})

t.test('a manifest whose label does not name the lock layer is refused as the shim would', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'layout-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const store = await openStore(parseRef(`oci-layout:${dir}:v1`), { dockerConfigDir: null })
  const pushed = await pushSpinApp(store, 'v1', app('w'))
  const manifest = JSON.parse((await store.getManifest(pushed.digest)).bytes.toString()) as ImageManifest
  const badConfig = Buffer.from(
    JSON.stringify({
      architecture: 'wasm',
      os: 'wasip1',
      config: { Labels: {} },
      rootfs: { type: 'layers', diff_ids: [] },
    }),
  )
  await store.pushBlob(badConfig, sha256Digest(badConfig))
  manifest.config = { ...manifest.config, digest: sha256Digest(badConfig), size: badConfig.length }
  const bad = await store.pushManifest(
    Buffer.from(JSON.stringify(manifest)),
    'application/vnd.oci.image.manifest.v1+json',
    'bad',
  )
  await t.rejects(pullSpinApp(store, bad), {
    message: /lockedAppDigest label \(undefined\) does not name the locked app layer/,
  })
})
