// PATCH application without a cluster: fields given replace, fields absent stay, every answer
// shows the settings (a secret only as {"secret": true}), bad input is a 400 naming the field,
// and the platform's resource policy (open, max, forced) as GET /policy describes it. Secret
// values on this machine are sealed in the database under a key the data directory keeps.
import { statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import fc from 'fast-check'
import { createApp, eachEngine, startTestControl } from '../helpers/control.js'
import type { TestControl } from '../helpers/control.js'
import { variableNames, variableValues } from '@session-relay/control/domain/variables'
import { findApplication } from '@session-relay/control/store/applications'
import type { StoredApplication } from '@session-relay/control/store/applications'
import { secretBox } from '@session-relay/control/store/secret-box'

const LOCAL = ['--dev-insecure-skip-auth', '--runtime', 'local']

async function patch(
  control: TestControl,
  appId: string,
  json: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const reply = await control.call('PATCH', `/applications/${appId}`, { json })
  return { status: reply.status, body: reply.body as Record<string, unknown> }
}

eachEngine(t, 'PATCH: fields given replace, absent ones stay, and every answer shows them', async (t, engine) => {
  const control = await startTestControl(t, engine, [...LOCAL, '--replicas', '2'])
  const app = await createApp(control, 'hello', { description: 'first' })
  t.match(app, { replicas: 2, autoscaling: null, resources: {}, variables: {} }, 'a new application shows the defaults')

  const scaled = await patch(control, app.id, { replicas: 3 })
  t.equal(scaled.status, 200)
  t.match(scaled.body, { description: 'first', replicas: 3, autoscaling: null, resources: {}, variables: {} })
  const described = await patch(control, app.id, { description: 'second' })
  t.match(described.body, { description: 'second', replicas: 3 }, 'replicas stay when absent')

  const configured = await patch(control, app.id, {
    resources: { cpuRequest: '100m', cpuLimit: '0.5', memoryLimit: '128Mi' },
    autoscaling: { minReplicas: 1, maxReplicas: 4, targetCpuPercent: 70 },
    variables: {
      greeting: { value: 'hello' },
      api_token: { secret: 'hunter2-secret' },
      db_password: { secretRef: { name: 'db', key: 'password' } },
    },
  })
  t.equal(configured.status, 200)
  t.same(
    {
      resources: configured.body.resources,
      autoscaling: configured.body.autoscaling,
      variables: configured.body.variables,
      replicas: configured.body.replicas,
    },
    {
      resources: { cpuRequest: '100m', cpuLimit: '0.5', memoryLimit: '128Mi' },
      autoscaling: { minReplicas: 1, maxReplicas: 4, targetCpuPercent: 70 },
      variables: {
        greeting: { value: 'hello' },
        api_token: { secret: true },
        db_password: { secretRef: { name: 'db', key: 'password' } },
      },
      replicas: 3,
    },
  )
  const read = await control.call('GET', `/applications/${app.id}`)
  t.same((read.body as { variables: unknown }).variables, configured.body.variables, 'GET shows the same')
  const list = await control.call('GET', '/applications')
  for (const text of [read.text, list.text, JSON.stringify(configured.body)]) {
    t.notMatch(text, /hunter2/, 'the secret value is in no answer')
    t.notMatch(text, /sealed/, 'nor its sealed form')
  }

  // Sending back what GET shows keeps the secret; a new value replaces it.
  const kept = await patch(control, app.id, { variables: { api_token: { secret: true }, greeting: { value: 'hi' } } })
  t.same(
    kept.body.variables,
    { api_token: { secret: true }, greeting: { value: 'hi' } },
    'variables replace as a whole',
  )
  const [row] = await control.server.db.query<{ variables: Record<string, { sealed?: string }> }>(
    'SELECT variables FROM applications WHERE id = $1',
    [app.id],
  )
  const sealed = row?.variables.api_token?.sealed ?? ''
  t.notMatch(JSON.stringify(row), /hunter2/, 'the database holds no secret in clear')
  t.equal(
    secretBox({ secretKeyFile: '', dataDir: control.store.dataDir }).open(sealed, `${app.id}/api_token`),
    'hunter2-secret',
    "it opens with the data directory's key, for this variable",
  )
  t.equal(
    secretBox({ secretKeyFile: '', dataDir: control.store.dataDir }).open(sealed, `${app.id}/greeting`),
    null,
    'and for no other name',
  )
  t.equal(
    statSync(join(control.store.dataDir, 'secret.key')).mode & 0o777,
    0o600,
    'the generated key is readable by its owner only',
  )

  // What the runtime on this machine gives the function: values, the secret unsealed, no secretRef.
  const withRef = await patch(control, app.id, {
    variables: { api_token: { secret: true }, greeting: { value: 'hi' }, db: { secretRef: { name: 'db', key: 'k' } } },
  })
  t.match(withRef.body.deployment, null)
  const stored = (await findApplication(control.server.db, app.id)) as StoredApplication
  t.same(variableNames(stored), ['api_token', 'db', 'greeting'])
  t.same(await variableValues(control.config, stored), { api_token: 'hunter2-secret', greeting: 'hi' })
  const otherKey = join(control.store.dataDir, 'other.key')
  writeFileSync(otherKey, Buffer.alloc(32, 7).toString('base64'))
  await t.rejects(variableValues({ ...control.config, secretKeyFile: otherKey }, stored), {
    message: /^variables.api_token: its secret value does not open with this secret key/,
  })

  const cleared = await patch(control, app.id, { autoscaling: null, variables: {} })
  t.match(cleared.body, { autoscaling: null, variables: {}, replicas: 3, resources: { cpuLimit: '0.5' } })
})

t.test('PATCH refuses bad input with 400 naming the field, an unknown application with 404', async (t) => {
  const control = await startTestControl(t, 'pglite', LOCAL)
  const app = await createApp(control, 'hello')
  const cases: Array<[string, unknown, string | RegExp]> = [
    ['zero replicas', { replicas: 0 }, /^replicas/],
    ['too many replicas', { replicas: 101 }, /^replicas/],
    ['fractional replicas', { replicas: 1.5 }, /^replicas: expected an integer/],
    ['an unknown field', { image: 'x' }, 'unknown property image'],
    [
      'min above max',
      { autoscaling: { minReplicas: 5, maxReplicas: 2, targetCpuPercent: 50 }, resources: { cpuRequest: '100m' } },
      'autoscaling.minReplicas: 5 is above autoscaling.maxReplicas 2',
    ],
    ['a CPU target of 0', { autoscaling: { minReplicas: 1, maxReplicas: 2, targetCpuPercent: 0 } }, /^autoscaling/],
    [
      'autoscaling without a CPU request',
      { autoscaling: { minReplicas: 1, maxReplicas: 2, targetCpuPercent: 50 } },
      /^autoscaling: needs resources.cpuRequest/,
    ],
    [
      'a request above its limit',
      { resources: { cpuRequest: '2', cpuLimit: '1500m' } },
      'resources.cpuRequest: 2 is above resources.cpuLimit 1500m',
    ],
    [
      'a memory request above its limit, in other units',
      { resources: { memoryRequest: '1Gi', memoryLimit: '1000Mi' } },
      'resources.memoryRequest: 1Gi is above resources.memoryLimit 1000Mi',
    ],
    [
      'a quantity with a unit in words',
      { resources: { cpuLimit: '1 core' } },
      /^resources.cpuLimit: expected a positive Kubernetes quantity/,
    ],
    [
      'a negative quantity',
      { resources: { memoryLimit: '-1Gi' } },
      /^resources.memoryLimit: expected a positive Kubernetes quantity/,
    ],
    [
      'a zero quantity',
      { resources: { memoryRequest: '0' } },
      /^resources.memoryRequest: expected a positive Kubernetes quantity/,
    ],
    ['an unknown resource', { resources: { gpu: '1' } }, 'resources: unknown property gpu'],
    [
      'an upper-case variable name',
      { variables: { Greeting: { value: 'x' } } },
      /^variables: "Greeting" is not a Spin variable name/,
    ],
    [
      'a variable name with "__"',
      { variables: { a__b: { value: 'x' } } },
      /^variables: "a__b" is not a Spin variable name/,
    ],
    ['a variable that is no object', { variables: { greeting: 'x' } }, /^variables.greeting/],
    ['a variable of two kinds', { variables: { greeting: { value: 'x', secret: 'y' } } }, /^variables.greeting/],
    [
      'a secret to keep that was never set',
      { variables: { token: { secret: true } } },
      'variables.token: no secret value is stored to keep; send {"secret": "<the value>"}',
    ],
    [
      'values too big together',
      {
        variables: Object.fromEntries(
          Array.from({ length: 17 }, (_, i) => [`v${i}`, { value: 'x'.repeat(16 * 1024) }]),
        ),
      },
      'variables: 278528 bytes of values in all, at most 262144',
    ],
    [
      'a secretRef to a bad name',
      { variables: { token: { secretRef: { name: 'Bad Name', key: 'k' } } } },
      /^variables.token.secretRef.name: expected the name of a Secret/,
    ],
  ]
  for (const [what, body, message] of cases) {
    const reply = await patch(control, app.id, body)
    t.equal(reply.status, 400, what)
    t.match(reply.body.error, message, `${what}: ${String(reply.body.error)}`)
  }
  const unchanged = await control.call('GET', `/applications/${app.id}`)
  t.match(
    unchanged.body,
    { replicas: 1, autoscaling: null, resources: {}, variables: {} },
    'nothing refused was stored',
  )
  const missing = await patch(control, '00000000-0000-4000-8000-000000000000', { replicas: 2 })
  t.equal(missing.status, 404)
})

t.test('GET /policy and the policy at PATCH: open fills defaults, max bounds, forced replaces', async (t) => {
  const open = await startTestControl(t, 'pglite', [...LOCAL, '--resource-memory-limit', '256Mi'])
  t.same((await open.call('GET', '/policy')).body, {
    mode: 'open',
    cpuRequest: null,
    cpuLimit: null,
    memoryRequest: null,
    memoryLimit: '256Mi',
    maxMemory: '512Mi',
    concurrency: { maxRunning: 100, maxQueued: 100 },
  })
  const fresh = await createApp(open, 'hello')
  t.same(
    (fresh as unknown as { resources: unknown }).resources,
    { memoryLimit: '256Mi' },
    "open: the platform's value is the default",
  )
  t.same(
    (await patch(open, fresh.id, { resources: { memoryLimit: '384Mi' } })).body.resources,
    { memoryLimit: '384Mi' },
    "open: the application's own value wins",
  )
  const tooBig = await patch(open, fresh.id, { resources: { memoryRequest: '512Mi' } })
  t.same(tooBig.body, {
    error:
      "resources.memoryRequest: 512Mi is above the platform's memoryLimit 256Mi, which applies when resources.memoryLimit is not given",
  })

  const max = await startTestControl(t, 'pglite', [
    ...LOCAL,
    '--resource-policy',
    'max',
    '--resource-cpu-limit',
    '1',
    '--resource-memory-limit',
    '256Mi',
  ])
  t.same((await max.call('GET', '/policy')).body, {
    mode: 'max',
    cpuRequest: null,
    cpuLimit: '1',
    memoryRequest: null,
    memoryLimit: '256Mi',
    maxMemory: '512Mi',
    concurrency: { maxRunning: 100, maxQueued: 100 },
  })
  const capped = await createApp(max, 'hello')
  const above = await patch(max, capped.id, { resources: { cpuLimit: '1001m' } })
  t.equal(above.status, 400)
  t.same(above.body, { error: "resources.cpuLimit: 1001m is above the platform's maximum 1" })
  const within = await patch(max, capped.id, { resources: { cpuLimit: '500m', memoryRequest: '64Mi' } })
  t.equal(within.status, 200)
  t.same(
    within.body.resources,
    { cpuLimit: '500m', memoryRequest: '64Mi', memoryLimit: '256Mi' },
    "max: what is left unset is the platform's value",
  )

  const forced = await startTestControl(t, 'pglite', [
    ...LOCAL,
    '--resource-policy',
    'forced',
    '--resource-cpu-request',
    '250m',
    '--resource-cpu-limit',
    '1',
  ])
  const app = await createApp(forced, 'hello')
  const replaced = await patch(forced, app.id, { resources: { cpuRequest: '2', cpuLimit: '4', memoryLimit: '384Mi' } })
  t.equal(replaced.status, 200)
  t.same(
    replaced.body.resources,
    { cpuRequest: '250m', cpuLimit: '1', memoryLimit: '384Mi' },
    'forced: the answer shows the values in force',
  )
})

t.test('autoscaling with a CPU limit and no request: Kubernetes takes the request from the limit', async (t) => {
  const autoscaling = { minReplicas: 1, maxReplicas: 3, targetCpuPercent: 60 }
  const open = await startTestControl(t, 'pglite', LOCAL)
  const own = await createApp(open, 'hello')
  const limited = await patch(open, own.id, { autoscaling, resources: { cpuLimit: '750m', memoryLimit: '256Mi' } })
  t.equal(limited.status, 200, JSON.stringify(limited.body))
  t.match(limited.body, { autoscaling, resources: { cpuLimit: '750m', memoryLimit: '256Mi' } })
  const neither = await patch(open, own.id, { resources: { memoryLimit: '256Mi' } })
  t.equal(neither.status, 400, 'taking the CPU limit away from an autoscaled application is refused')
  t.match(neither.body, { error: /^autoscaling: needs resources.cpuRequest or resources.cpuLimit/ })

  // Under forced, the platform's limit alone is what is in force, whatever the PATCH sets.
  const forced = await startTestControl(t, 'pglite', [
    ...LOCAL,
    '--resource-policy',
    'forced',
    '--resource-cpu-limit',
    '1',
    '--resource-memory-limit',
    '256Mi',
  ])
  const app = await createApp(forced, 'hello')
  const onlyLimits = await patch(forced, app.id, { autoscaling, resources: { cpuLimit: '750m', memoryLimit: '256Mi' } })
  t.equal(onlyLimits.status, 200, JSON.stringify(onlyLimits.body))
  t.match(onlyLimits.body, { autoscaling, resources: { cpuLimit: '1', memoryLimit: '256Mi' } })
})

t.test(
  'the largest memory (--resource-max-memory, 512Mi by default): above it is 400 naming it, in every mode',
  async (t) => {
    const open = await startTestControl(t, 'pglite', [...LOCAL, '--resource-max-memory', '1Gi'])
    const app = await createApp(open, 'hello')
    t.equal((await patch(open, app.id, { resources: { memoryLimit: '1Gi' } })).status, 200, 'within a raised cap')
    await open.close()

    // The same database under the default cap: the value stored before is lowered where it is read.
    const capped = await startTestControl(t, 'pglite', LOCAL, { store: open.store })
    t.match((await capped.call('GET', '/policy')).body, { mode: 'open', maxMemory: '512Mi' })
    t.match((await capped.call('GET', `/applications/${app.id}`)).body, { resources: { memoryLimit: '512Mi' } })
    const above = await patch(capped, app.id, { resources: { memoryLimit: '4Gi' } })
    t.same(above, {
      status: 400,
      body: {
        error: "resources.memoryLimit: 4Gi is above the platform's largest memory 512Mi (--resource-max-memory)",
      },
    })
    t.match((await patch(capped, app.id, { resources: { memoryRequest: '600Mi' } })).body, {
      error: /^resources.memoryRequest: 600Mi is above the platform's largest memory 512Mi/,
    })
    t.equal((await patch(capped, app.id, { resources: { cpuLimit: '64' } })).status, 200, 'CPU is not bounded by it')
    // Compared by value, in any unit: 512Mi is 536870912 bytes.
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2 * 536870912 }), async (bytes) => {
        const reply = await patch(capped, app.id, { resources: { memoryLimit: `${bytes}` } })
        return bytes <= 536870912 ? reply.status === 200 : reply.status === 400
      }),
      { numRuns: 40, examples: [[536870912], [536870913]] },
    )

    const max = await startTestControl(t, 'pglite', [...LOCAL, '--resource-policy', 'max', '--resource-cpu-limit', '1'])
    const other = await createApp(max, 'other')
    t.equal((await patch(max, other.id, { resources: { memoryLimit: '1Gi' } })).status, 400, 'max: the same cap')
  },
)
