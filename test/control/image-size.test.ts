// A build's image size is its manifest's config plus layers, read from where the build put it:
// here an OCI layout holding a real Spin artifact (the registry case goes through the same
// store interface, common/src/spin/registry.ts, tested against a real registry there).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { pushSpinApp } from '../../common/src/spin/artifact.js'
import { layoutStore } from '../../common/src/spin/layout.js'
import { measureImage } from '../../control/src/domain/image-size.js'

t.test('the size of a pushed Spin application: config plus every layer', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'image-size-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const wasm = new Uint8Array(3000).fill(7)
  const pushed = await pushSpinApp(layoutStore(dir), 'b1', {
    lockedApp: { spin_lock_version: 1, triggers: [], components: [{ id: 'hello', source: { content_type: 'application/wasm' } }] } as never,
    wasm: new Map([['hello', wasm]]),
  })
  const expected = pushed.manifest.config.size + pushed.manifest.layers.reduce((sum, layer) => sum + layer.size, 0)
  t.ok(expected > wasm.length, 'the wasm layer and the lock and config')
  t.equal(await measureImage({ registryInsecure: false }, `oci-layout:${dir}@${pushed.digest}`), expected)
  t.equal(await measureImage({ registryInsecure: false }, `oci-layout:${dir}:b1`), expected, 'by tag too')
  await t.rejects(measureImage({ registryInsecure: false }, `oci-layout:${dir}@sha256:${'0'.repeat(64)}`), 'an image that is not there is no size')
})
