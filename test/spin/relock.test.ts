// Relocking a pushed Spin application with a set of variable names, against a real
// distribution registry (htpasswd credentials) and an image-layout directory: the new lock
// declares the names and maps them in every component's config, the wasm layers are reused
// (never sent again), the result pulls back with the shim's checks, and the same names give the
// same digest.
import fc from 'fast-check'
import t from 'tap'
import type { Test } from 'tap'
import { pullSpinApp, pushSpinApp } from '@session-relay/spin/artifact'
import type { SpinApplication } from '@session-relay/spin/artifact'
import type { ImageConfig } from '@session-relay/spin/format'
import { parseRef } from '@session-relay/spin/ref'
import { relockVariables } from '@session-relay/spin/relock'
import { isVariableName } from '@session-relay/spin/variable-name'
import type { ArtifactStore } from '@session-relay/spin/store'
import { openStore } from '@session-relay/spin/store'
import { dockerConfigDir, startRegistry } from '../helpers/registry.js'

// Big enough that sending it again would show in the byte count.
const WASM = Buffer.alloc(2 * 1024 * 1024, 7)

function app(): SpinApplication {
  return {
    lockedApp: {
      spin_lock_version: 1,
      metadata: { name: 'demo', version: '0.1.0' },
      triggers: [
        { id: 'a-http-trigger', trigger_type: 'http', trigger_config: { component: 'a', route: '/a/...' } },
        { id: 'b-http-trigger', trigger_type: 'http', trigger_config: { component: 'b', route: '/b/...' } },
      ],
      components: [
        { id: 'a', metadata: { allowed_outbound_hosts: [] }, source: { content_type: 'application/wasm' } },
        { id: 'b', metadata: { allowed_outbound_hosts: [] }, source: { content_type: 'application/wasm' } },
      ],
    },
    wasm: new Map([
      ['a', WASM],
      ['b', Buffer.concat([WASM, Buffer.from('b')])],
    ]),
  }
}

/** The store, counting what is pushed. */
function counting(store: ArtifactStore): { store: ArtifactStore; pushed: string[] } {
  const pushed: string[] = []
  return {
    pushed,
    store: {
      ...store,
      pushBlob: async (bytes, digest) => {
        pushed.push(digest)
        await store.pushBlob(bytes, digest)
      },
    },
  }
}

async function relockChecks(t: Test, base: ArtifactStore, tag: string): Promise<void> {
  const original = await pushSpinApp(base, tag, app())
  const wasmDigests = original.manifest.layers.slice(0, 2).map((layer) => layer.digest)
  const { store, pushed } = counting(base)

  const started = Date.now()
  const relocked = await relockVariables(store, tag, ['greeting', 'api_key'], { secret: new Set(['api_key']) })
  t.comment(`relock: ${Date.now() - started} ms, ${relocked.pushedBlobs} blobs, ${relocked.pushedBytes} bytes pushed`)
  t.not(relocked.digest, original.digest)
  t.equal(pushed.length, 2, 'the new lock and config only')
  t.notOk(
    pushed.some((digest) => wasmDigests.includes(digest)),
    'no wasm layer is sent again',
  )
  t.ok(relocked.pushedBytes < 4096, `a few KiB pushed (${relocked.pushedBytes} bytes)`)

  const pulled = await pullSpinApp(store, relocked.digest)
  t.same(
    pulled.lockedApp.variables,
    { api_key: { secret: true }, greeting: {} },
    'declared, required, sorted; secret where asked',
  )
  t.same(Object.keys(pulled.lockedApp.variables ?? {}), ['api_key', 'greeting'])
  for (const component of pulled.lockedApp.components) {
    t.same(
      component.config,
      { api_key: '{{ api_key }}', greeting: '{{ greeting }}' },
      `component ${component.id} maps every variable`,
    )
  }
  t.same(
    pulled.manifest.layers.slice(0, 2).map((layer) => layer.digest),
    wasmDigests,
    'the same wasm layers',
  )
  t.same(pulled.lockedApp.triggers, app().lockedApp.triggers)
  const config = JSON.parse((await store.getBlob(pulled.manifest.config.digest, 1 << 20)).toString()) as ImageConfig
  t.equal(config.architecture, 'wasm', 'the rest of the config is kept')
  t.equal(config.config.Labels['com.fermyon.spin.lockedAppDigest'], pulled.manifest.layers[2]!.digest)

  pushed.length = 0
  const again = await relockVariables(store, relocked.digest, ['api_key', 'greeting', 'greeting'], {
    secret: new Set(['api_key']),
  })
  t.equal(
    again.digest,
    relocked.digest,
    'the same names give the same digest, from the original or the relocked artifact',
  )
  t.equal(again.pushedBlobs, 0)
  t.same(pushed, [])

  const other = await relockVariables(store, relocked.digest, ['colour'])
  const otherApp = await pullSpinApp(store, other.digest)
  t.same(otherApp.lockedApp.variables, { colour: {} }, 'names replace, they do not accumulate')
  t.same(otherApp.lockedApp.components[0]!.config, { colour: '{{ colour }}' })

  const none = await relockVariables(store, other.digest, [])
  t.equal(none.digest, original.digest, 'no names give back the artifact as built')
  const noneApp = await pullSpinApp(store, none.digest)
  t.notOk('variables' in noneApp.lockedApp)
  t.notOk('config' in noneApp.lockedApp.components[0]!)

  await t.rejects(relockVariables(store, tag, ['Greeting']), /"Greeting" is not a Spin variable name/)
}

t.test('relock in a registry with credentials', async (t) => {
  const registry = await startRegistry(t, { auth: true })
  const config = await dockerConfigDir(t, registry.host, registry.credentials!)
  const store = await openStore(parseRef(`${registry.host}/apps/demo:b1`), { dockerConfigDir: config })
  await relockChecks(t, store, 'b1')
})

t.test('relock in an image-layout directory', async (t) => {
  const store = await openStore(parseRef(`oci-layout:${t.testdir({})}:b1`), { dockerConfigDir: null })
  await relockChecks(t, store, 'b1')
})

t.test("a function's declared defaults stay through a relock; the application's names join them", async (t) => {
  const store = await openStore(parseRef(`oci-layout:${t.testdir({})}:b1`), { dockerConfigDir: null })
  const built = app()
  // As builders/src/locked-app.ts locks a function `a` whose variables.toml declares greeting.
  built.lockedApp.variables = { greeting: { default: 'hello' } }
  built.lockedApp.components[0]!.config = { greeting: '{{ greeting }}' }
  await pushSpinApp(store, 'b1', built)

  const keyed = await relockVariables(store, 'b1', ['api_key'])
  const withKey = await pullSpinApp(store, keyed.digest)
  t.same(
    withKey.lockedApp.variables,
    { api_key: {}, greeting: { default: 'hello' } },
    'the default kept, the name added',
  )
  t.same(withKey.lockedApp.components[0]!.config, { api_key: '{{ api_key }}', greeting: '{{ greeting }}' })
  t.same(
    withKey.lockedApp.components[1]!.config,
    { api_key: '{{ api_key }}' },
    'b reads only what the application sets',
  )

  const secret = await relockVariables(store, 'b1', ['greeting'], { secret: new Set(['greeting']) })
  const set = await pullSpinApp(store, secret.digest)
  t.same(
    set.lockedApp.variables,
    { greeting: { default: 'hello', secret: true } },
    'set by the application: still its default',
  )
  t.same(set.lockedApp.components[1]!.config, { greeting: '{{ greeting }}' })

  const none = await pullSpinApp(store, (await relockVariables(store, 'b1', [])).digest)
  t.same(none.lockedApp, (await pullSpinApp(store, 'b1')).lockedApp, 'no names: the lock as built')
  // Relocking the relocked artifact with fewer names: the earlier relock's names go.
  const fewer = await pullSpinApp(store, (await relockVariables(store, keyed.digest, [])).digest)
  t.same(fewer.lockedApp.variables, { greeting: { default: 'hello' } })
})

t.test("variable names follow Spin's rules", async (t) => {
  for (const good of ['a', 'greeting', 'api_key', 'a1_b2']) t.ok(isVariableName(good), good)
  for (const bad of ['', 'A', '1a', '_a', 'a_', 'a__b', 'a-b', 'a.b', 'ä'])
    t.notOk(isVariableName(bad), JSON.stringify(bad))
})

t.test(
  'property: every accepted name has its own SPIN_VARIABLE_ environment variable, and only accepted names are relocked',
  async (t) => {
    const name = fc.stringMatching(/^[a-zA-Z0-9_.-]{0,8}$/)
    fc.assert(
      fc.property(name, name, (a, b) => {
        // Spin's env provider upper-cases the name: two names must never meet in one variable.
        if (isVariableName(a) && isVariableName(b) && a !== b) return a.toUpperCase() !== b.toUpperCase()
        return true
      }),
      { seed: 23, numRuns: 2000 },
    )
    const store = await openStore(parseRef(`oci-layout:${t.testdir({})}:b1`), { dockerConfigDir: null })
    await pushSpinApp(store, 'b1', app())
    await fc.assert(
      fc.asyncProperty(name, async (candidate) => {
        const outcome = await relockVariables(store, 'b1', [candidate]).then(
          () => true,
          (error: Error) => (/is not a Spin variable name/.test(error.message) ? false : Promise.reject(error)),
        )
        return outcome === isVariableName(candidate)
      }),
      { seed: 23, numRuns: 60 },
    )
  },
)
