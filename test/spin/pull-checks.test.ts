// What a pull refuses, one check at a time: each artifact below is a correct Spin artifact with
// one thing broken, written into an image-layout directory (the embedded store), and the pull
// must fail with the error that names that one thing, as containerd-shim-spin would refuse it.
// Then the layout store's own refusals: an unknown tag, a missing or oversized or changed blob,
// an unreadable index, and the Docker config.json a store's credentials come from.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { pullSpinApp, pushSpinApp } from '@session-relay/spin/artifact'
import { dockerCredentials } from '@session-relay/spin/auth'
import { sha256Digest } from '@session-relay/spin/digest'
import type { ImageManifest, LockedApp } from '@session-relay/spin/format'
import {
  CONFIG_MEDIA_TYPE,
  INDEX_MEDIA_TYPE,
  LOCKED_APP_DIGEST_LABEL,
  LOCKED_APP_MEDIA_TYPE,
  MANIFEST_MEDIA_TYPE,
  WASM_LAYER_MEDIA_TYPE,
} from '@session-relay/spin/format'
import { layoutStore } from '@session-relay/spin/layout'
import { relockReference } from '@session-relay/spin/relock'
import type { ArtifactStore } from '@session-relay/spin/store'

const WASM = Buffer.from('\0asm component')
const WASM_DIGEST = sha256Digest(WASM)

function lockedApp(): LockedApp {
  return {
    spin_lock_version: 1,
    triggers: [{ id: 't', trigger_type: 'http', trigger_config: { component: 'hello', route: '/...' } }],
    components: [{ id: 'hello', source: { content_type: 'application/wasm', digest: WASM_DIGEST } }],
  }
}

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'spin-pull-checks-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

type Parts = { lock: unknown; label?: string; manifest?: (manifest: ImageManifest) => unknown }

/** A layout holding an artifact tagged `v1`, built from `parts`, with the wasm blob stored. */
async function artifact(t: Test, parts: Parts): Promise<ArtifactStore> {
  const store = layoutStore(await tempDir(t))
  const put = async (bytes: Buffer): Promise<string> => {
    const digest = sha256Digest(bytes)
    await store.pushBlob(bytes, digest)
    return digest
  }
  await put(WASM)
  const lockBytes = Buffer.from(typeof parts.lock === 'string' ? parts.lock : JSON.stringify(parts.lock))
  const lockDigest = await put(lockBytes)
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'wasm',
      os: 'wasip1',
      config: { Labels: { [LOCKED_APP_DIGEST_LABEL]: parts.label ?? lockDigest } },
      rootfs: { type: 'layers', diff_ids: [] },
    }),
  )
  const configDigest = await put(config)
  const manifest: ImageManifest = {
    schemaVersion: 2,
    mediaType: MANIFEST_MEDIA_TYPE,
    config: { mediaType: CONFIG_MEDIA_TYPE, digest: configDigest, size: config.length },
    layers: [
      { mediaType: WASM_LAYER_MEDIA_TYPE, digest: WASM_DIGEST, size: WASM.length },
      { mediaType: LOCKED_APP_MEDIA_TYPE, digest: lockDigest, size: lockBytes.length },
    ],
  }
  const shaped = parts.manifest === undefined ? manifest : parts.manifest(manifest)
  await store.pushManifest(
    Buffer.from(typeof shaped === 'string' ? shaped : JSON.stringify(shaped)),
    MANIFEST_MEDIA_TYPE,
    'v1',
  )
  return store
}

t.test('the artifact the other cases break pulls', async (t) => {
  const pulled = await pullSpinApp(await artifact(t, { lock: lockedApp() }), 'v1')
  t.same([...pulled.wasm.keys()], [WASM_DIGEST])
})

t.test('a manifest the shim would not run', async (t) => {
  const cases: Array<[string, (manifest: ImageManifest) => unknown, string]> = [
    ['not JSON', () => '{"schemaVersion":', 'the manifest is not JSON'],
    ['schemaVersion 1', (m) => ({ ...m, schemaVersion: 1 }), 'the manifest is not schemaVersion 2'],
    [
      'an index',
      (m) => ({ ...m, mediaType: INDEX_MEDIA_TYPE }),
      `the manifest is a ${INDEX_MEDIA_TYPE}, not an OCI image manifest`,
    ],
    [
      'a Docker config',
      (m) => ({ ...m, config: { ...m.config, mediaType: 'application/vnd.docker.container.image.v1+json' } }),
      `the manifest's config is not ${CONFIG_MEDIA_TYPE}`,
    ],
    [
      'a config without a digest',
      (m) => ({ ...m, config: { ...m.config, digest: 'md5:abc' } }),
      `the manifest's config is not ${CONFIG_MEDIA_TYPE}`,
    ],
    ['no layers', (m) => ({ ...m, layers: null }), 'the manifest has no layers'],
    [
      'a tar layer',
      (m) => ({
        ...m,
        layers: [...m.layers, { mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: WASM_DIGEST, size: 1 }],
      }),
      'the manifest has a layer of unknown media type "application/vnd.oci.image.layer.v1.tar"',
    ],
    [
      'a layer without a digest',
      (m) => ({ ...m, layers: [{ ...m.layers[0], digest: 'sha256:short' }, m.layers[1]] }),
      'the manifest has a layer without a sha256 digest',
    ],
    [
      'two locked apps',
      (m) => ({ ...m, layers: [...m.layers, m.layers[1]] }),
      `the manifest needs exactly one ${LOCKED_APP_MEDIA_TYPE} layer`,
    ],
    [
      'no locked app',
      (m) => ({ ...m, layers: [m.layers[0]] }),
      `the manifest needs exactly one ${LOCKED_APP_MEDIA_TYPE} layer`,
    ],
  ]
  for (const [name, manifest, message] of cases) {
    await t.rejects(pullSpinApp(await artifact(t, { lock: lockedApp(), manifest }), 'v1'), { message }, name)
  }
})

t.test('a lock the shim would not run', async (t) => {
  const other = sha256Digest(Buffer.from('another lock'))
  await t.rejects(
    pullSpinApp(await artifact(t, { lock: lockedApp(), label: other }), 'v1'),
    {
      message: new RegExp(
        `^the config's ${LOCKED_APP_DIGEST_LABEL} label \\(${other}\\) does not name the locked app layer sha256:[0-9a-f]{64}$`,
      ),
    },
    'a label naming another layer',
  )
  await t.rejects(pullSpinApp(await artifact(t, { lock: 'not json' }), 'v1'), {
    message: 'the locked app layer is not JSON',
  })
  await t.rejects(pullSpinApp(await artifact(t, { lock: { ...lockedApp(), spin_lock_version: 2 } }), 'v1'), {
    message: 'unsupported spin_lock_version 2',
  })
  await t.rejects(pullSpinApp(await artifact(t, { lock: { spin_lock_version: 1, components: [] } }), 'v1'), {
    message: 'the locked app has no triggers or components',
  })
  const elsewhere = sha256Digest(Buffer.from('wasm from elsewhere'))
  await t.rejects(
    pullSpinApp(
      await artifact(t, {
        lock: {
          ...lockedApp(),
          components: [{ id: 'hello', source: { content_type: 'application/wasm', digest: elsewhere } }],
        },
      }),
      'v1',
    ),
    { message: "component hello's source is not a wasm layer of the manifest" },
  )
  await t.rejects(
    pullSpinApp(
      await artifact(t, {
        lock: {
          ...lockedApp(),
          components: [{ id: 'hello', source: { content_type: 'application/wasm', source: 'file:///tmp/x.wasm' } }],
        },
      }),
      'v1',
    ),
    { message: "component hello's source is not a wasm layer of the manifest" },
    'a local source',
  )
})

t.test("a push of an application missing a component's wasm stores nothing", async (t) => {
  const dir = await tempDir(t)
  const store = layoutStore(dir)
  await t.rejects(pushSpinApp(store, 'v1', { lockedApp: lockedApp(), wasm: new Map() }), {
    message: 'no wasm for component hello',
  })
  await t.rejects(store.getManifest('v1'), { message: `no manifest tagged "v1" in ${dir}` })
})

t.test('the layout store refuses what it cannot vouch for', async (t) => {
  const dir = await tempDir(t)
  const store = layoutStore(dir)
  await t.rejects(store.pushBlob(WASM, sha256Digest(Buffer.from('other'))), {
    message: `blob: content does not match its digest ${sha256Digest(Buffer.from('other'))} (got ${WASM_DIGEST})`,
  })
  await t.rejects(store.getBlob(WASM_DIGEST, 1024), { message: `blob ${WASM_DIGEST} is not in ${dir}` })
  await t.rejects(store.getBlob('sha256:../../etc/passwd', 1024), {
    message: '"sha256:../../etc/passwd" is not a sha256 digest',
  })
  t.equal(await store.hasBlob('latest'), false, 'a name that is no digest is no blob')
  await store.pushBlob(WASM, WASM_DIGEST)
  await t.rejects(store.getBlob(WASM_DIGEST, 4), {
    message: `blob ${WASM_DIGEST} is ${WASM.length} bytes, more than the 4 allowed`,
  })
  await writeFile(join(dir, 'blobs', 'sha256', WASM_DIGEST.slice('sha256:'.length)), 'changed on disk')
  await t.rejects(store.getBlob(WASM_DIGEST, 1024), {
    message: `blob ${WASM_DIGEST}: content does not match its digest ${WASM_DIGEST} (got ${sha256Digest(Buffer.from('changed on disk'))})`,
  })
  await writeFile(join(dir, 'index.json'), '{"schemaVersion":')
  await t.rejects(store.getManifest('v1'), SyntaxError, 'an index.json that is not JSON is not an empty index')
})

t.test('a Docker config.json that is not one', async (t) => {
  const dir = await tempDir(t)
  t.equal(await dockerCredentials(dir, 'registry.example.com'), null, 'no file, no credentials')
  await writeFile(join(dir, 'config.json'), '{"auths":')
  await t.rejects(dockerCredentials(dir, 'registry.example.com'), {
    message: `${join(dir, 'config.json')} is not JSON`,
  })
  await writeFile(join(dir, 'config.json'), Buffer.alloc(1024 * 1024 + 1, ' '))
  await t.rejects(dockerCredentials(dir, 'registry.example.com'), {
    message: `${join(dir, 'config.json')} is larger than 1048576 bytes`,
  })
  await writeFile(
    join(dir, 'config.json'),
    JSON.stringify({
      auths: { 'https://registry.example.com/v1/': { auth: Buffer.from('no-colon').toString('base64') } },
    }),
  )
  await t.rejects(dockerCredentials(dir, 'registry.example.com'), {
    message: 'config.json: the auth entry for registry.example.com is not base64 of user:password',
  })
  await writeFile(join(dir, 'config.json'), JSON.stringify({ auths: { 'registry.example.com': {} } }))
  t.equal(await dockerCredentials(dir, 'registry.example.com'), null, 'an entry without credentials is none')
  await t.rejects(
    dockerCredentials(join(dir, 'config.json'), 'registry.example.com'),
    { code: 'ENOTDIR' },
    'a path that is a file is an error, not "no credentials"',
  )
})

t.test('relockReference pins the relocked artifact; with no names the reference is left as it was', async (t) => {
  const dir = join(await tempDir(t), 'layout')
  await pushSpinApp(layoutStore(dir), 'v1', { lockedApp: lockedApp(), wasm: new Map([['hello', WASM]]) })
  t.equal(
    await relockReference(`oci-layout:${join(dir, 'absent')}:v1`, [], { dockerConfigDir: null }),
    `oci-layout:${join(dir, 'absent')}:v1`,
    'nothing is read',
  )
  const pinned = await relockReference(`oci-layout:${dir}:v1`, ['greeting'], { dockerConfigDir: null })
  t.match(pinned, new RegExp(`^oci-layout:${dir}@sha256:[0-9a-f]{64}$`))
  const pulled = await pullSpinApp(layoutStore(dir), pinned.slice(pinned.indexOf('@') + 1))
  t.same(pulled.lockedApp.variables, { greeting: {} })
  t.same(pulled.lockedApp.components[0]?.config, { greeting: '{{ greeting }}' })
})
