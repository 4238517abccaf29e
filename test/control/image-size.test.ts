// A build's image size is its manifest's config plus layers, read from where the build put it:
// an OCI layout holding a real Spin artifact, and a real distribution registry on loopback.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { pushSpinApp } from '@session-relay/spin/artifact'
import type { SpinApplication } from '@session-relay/spin/artifact'
import { layoutStore } from '@session-relay/spin/layout'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import { measureImage } from '@session-relay/control/domain/image-size'
import { dockerConfigDir, startRegistry } from '../helpers/registry.js'

function application(bytes: number): SpinApplication {
  return {
    lockedApp: {
      spin_lock_version: 1,
      triggers: [],
      components: [{ id: 'hello', source: { content_type: 'application/wasm' } }],
    } as never,
    wasm: new Map([['hello', new Uint8Array(bytes).fill(7)]]),
  }
}

t.test('the size of a pushed Spin application: config plus every layer', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'image-size-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const pushed = await pushSpinApp(layoutStore(dir), 'b1', application(3000))
  const expected = pushed.manifest.config.size + pushed.manifest.layers.reduce((sum, layer) => sum + layer.size, 0)
  t.ok(expected > 3000, 'the wasm layer and the lock and config')
  t.equal(
    await measureImage({ registryInsecure: false, dockerConfig: null }, `oci-layout:${dir}@${pushed.digest}`),
    expected,
  )
  t.equal(
    await measureImage({ registryInsecure: false, dockerConfig: null }, `oci-layout:${dir}:b1`),
    expected,
    'by tag too',
  )
  await t.rejects(
    measureImage({ registryInsecure: false, dockerConfig: null }, `oci-layout:${dir}@sha256:${'0'.repeat(64)}`),
    'an image that is not there is no size',
  )
})

t.test('the size of an image in a registry, by the digest-pinned reference a builder reports', async (t) => {
  const registry = await startRegistry(t)
  const pushed = await pushSpinApp(
    await openStore(parseRef(`${registry.host}/apps/hello:b1`), { dockerConfigDir: null }),
    'b1',
    application(5000),
  )
  const expected = pushed.manifest.config.size + pushed.manifest.layers.reduce((sum, layer) => sum + layer.size, 0)
  t.equal(
    await measureImage({ registryInsecure: false, dockerConfig: null }, `${registry.host}/apps/hello@${pushed.digest}`),
    expected,
  )
})

// Without the token server the control plane reads sizes with its own --docker-config (DOCKER_CONFIG).
t.test('a registry that wants credentials: read with those of --docker-config, else no size', async (t) => {
  const registry = await startRegistry(t, { auth: true })
  const credentials = await dockerConfigDir(t, registry.host, registry.credentials!)
  const pushed = await pushSpinApp(
    await openStore(parseRef(`${registry.host}/apps/locked:b1`), { dockerConfigDir: credentials }),
    'b1',
    application(2000),
  )
  const expected = pushed.manifest.config.size + pushed.manifest.layers.reduce((sum, layer) => sum + layer.size, 0)
  const ref = `${registry.host}/apps/locked@${pushed.digest}`
  t.equal(await measureImage({ registryInsecure: false, dockerConfig: credentials }, ref), expected)
  await t.rejects(measureImage({ registryInsecure: false, dockerConfig: null }, ref), 'no credentials, no size')
})
