// Tenants and roles with real id tokens from a real OpenID provider: each caller sees and
// touches only their tenants' applications (403 under anyone else's, on every route), names
// are unique per tenant, an admin sees and changes all, a read-only member reads everything of
// their tenants and writes nothing.
import { gzipSync } from 'node:zlib'
import t from 'tap'
import type { Test } from 'tap'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { startPrometheus } from '../fixtures/prometheus.js'
import type { OidcFixture } from '../fixtures/oidc-provider.js'
import { openDatabase } from '@session-relay/control/store/db'
import { migrate, migrations } from '@session-relay/control/store/migrations'
import { realCluster, SPINAPP, startKubelet, succeedJob } from '../fixtures/kube-real.js'
import { BUILDERS, REPOSITORY, tempDir } from '../helpers/cluster.js'
import { kubeNamespace } from '../helpers/kube-apiserver.js'
import { freshStore, isErrorBody, startTestControl, until } from '../helpers/control.js'
import type { App, TestControl } from '../helpers/control.js'

// Authorisation does not depend on the database engine.
const ENGINE = 'pglite'

const ROLES = ['--tenant-claim', 'groups', '--admin-claim', 'roles=platform-admin', '--readonly-claim', 'roles=viewer']

async function setUp(t: Test, extra: string[] = ROLES): Promise<{ oidc: OidcFixture; control: TestControl }> {
  const oidc = await startOidcProvider()
  t.teardown(() => oidc.close())
  const control = await startTestControl(t, ENGINE, [
    '--oidc-issuer',
    oidc.issuer,
    '--oidc-audience',
    oidc.clientId,
    ...extra,
  ])
  return { oidc, control }
}

async function create(control: TestControl, token: string, name: string, tenant?: string): Promise<App> {
  const reply = await control.call('POST', '/applications', {
    token,
    json: { name, language: 'go', runtime: 'wasmkube', ...(tenant === undefined ? {} : { tenant }) },
  })
  if (reply.status !== 201) throw new Error(`create answered ${reply.status}: ${reply.text}`)
  return reply.body as App
}

/** Every route under an application, with a body its schema accepts. */
function routesUnder(
  appId: string,
  fnId: string,
): Array<{
  method: string
  path: string
  write: boolean
  json?: unknown
  body?: Buffer
  headers?: Record<string, string>
}> {
  const build = '00000000-0000-4000-8000-000000000000'
  const fn = `/applications/${appId}/functions/${fnId}`
  return [
    { method: 'GET', path: `/applications/${appId}`, write: false },
    { method: 'PATCH', path: `/applications/${appId}`, write: true, json: { replicas: 2 } },
    { method: 'GET', path: `/applications/${appId}/functions`, write: false },
    { method: 'POST', path: `/applications/${appId}/functions`, write: true, json: { name: 'extra' } },
    { method: 'GET', path: fn, write: false },
    { method: 'PUT', path: fn, write: true, json: { route: '/moved/...' } },
    { method: 'GET', path: `${fn}/source`, write: false },
    { method: 'PUT', path: `${fn}/source`, write: true, json: { files: { 'main.go': 'package main' } } },
    { method: 'GET', path: `${fn}/source.tar.gz`, write: false },
    {
      method: 'POST',
      path: `${fn}/source.tar.gz`,
      write: true,
      body: gzipSync(Buffer.alloc(1024)),
      headers: { 'content-type': 'application/gzip' },
    },
    { method: 'GET', path: `/applications/${appId}/builds`, write: false },
    { method: 'POST', path: `/applications/${appId}/builds`, write: true },
    { method: 'GET', path: `/applications/${appId}/builds/${build}`, write: false },
    { method: 'GET', path: `/applications/${appId}/builds/${build}/logs`, write: false },
    { method: 'POST', path: `/applications/${appId}/deploy`, write: true },
    { method: 'POST', path: `${fn}/invoke`, write: true, json: { method: 'GET', path: '/' } },
    { method: 'GET', path: `/applications/${appId}/logs`, write: false },
    { method: 'GET', path: `/applications/${appId}/metrics`, write: false },
    { method: 'GET', path: `${fn}/metrics`, write: false },
    { method: 'DELETE', path: fn, write: true },
    { method: 'DELETE', path: `/applications/${appId}`, write: true },
  ]
}

t.test(
  "a tenant sees only its applications; under another tenant's, every route answers 403; an unknown id stays 404",
  async (t) => {
    const { oidc, control } = await setUp(t)
    const red = await oidc.idToken({ claims: { groups: ['red'] } })
    const blue = await oidc.idToken({ claims: { groups: 'blue' } })
    const redApp = await create(control, red, 'hello')
    const blueApp = await create(control, blue, 'hello')
    t.equal(redApp.tenant, 'red', 'the only tenant is the default')
    t.equal(blueApp.tenant, 'blue', 'a string claim names one tenant')
    t.not(redApp.id, blueApp.id, 'two tenants can each have hello')

    const again = await control.call('POST', '/applications', {
      token: red,
      json: { name: 'hello', language: 'go', runtime: 'wasmkube' },
    })
    t.equal(again.status, 409, 'but not twice in one tenant')

    const redList = await control.call('GET', '/applications', { token: red })
    t.same(
      (redList.body as App[]).map((a) => [a.id, a.tenant]),
      [[redApp.id, 'red']],
      'red lists only red',
    )
    const blueList = await control.call('GET', '/applications', { token: blue })
    t.same(
      (blueList.body as App[]).map((a) => [a.id, a.tenant]),
      [[blueApp.id, 'blue']],
      'blue lists only blue',
    )
    t.equal(
      ((await control.call('GET', `/applications/${redApp.id}`, { token: red })).body as App).tenant,
      'red',
      'get shows the tenant',
    )

    const fnId = redApp.functions[0]?.id ?? ''
    for (const route of routesUnder(redApp.id, fnId)) {
      const reply = await control.call(route.method, route.path, { token: blue, ...pick(route) })
      t.equal(reply.status, 403, `blue: ${route.method} ${route.path.replace(redApp.id, '{red}')}`)
      t.same(reply.body, { error: 'this application belongs to a tenant you are not in' })
      if (route.body !== undefined)
        t.equal(reply.headers.get('connection'), 'close', 'the unread upload is not drained: the connection ends')
    }
    const got = await control.call('GET', `/applications/${redApp.id}`, { token: red })
    t.equal((got.body as App).functions.length, 1, "nothing blue tried changed red's application")

    const nowhere = '11111111-1111-4111-8111-111111111111'
    for (const route of routesUnder(nowhere, nowhere)) {
      const reply = await control.call(route.method, route.path, { token: blue, ...pick(route) })
      t.equal(reply.status, 404, `an id that exists nowhere: ${route.method} ${route.path.replace(nowhere, '{x}')}`)
    }
  },
)

t.test(
  'the tenant claim: missing is 403 naming it; several tenants must name one; another tenant is 403',
  async (t) => {
    const { oidc, control } = await setUp(t)
    const none = await oidc.idToken()
    const noTenant = await control.call('GET', '/applications', { token: none })
    t.equal(noTenant.status, 403)
    t.same(noTenant.body, { error: 'token lacks the tenant claim groups' })
    const emptyArray = await oidc.idToken({ claims: { groups: [] } })
    t.equal(
      (await control.call('GET', '/applications', { token: emptyArray })).status,
      403,
      'an empty array names no tenant',
    )

    const both = await oidc.idToken({ claims: { groups: ['red', 'blue'] } })
    const unnamed = await control.call('POST', '/applications', {
      token: both,
      json: { name: 'shop', language: 'go', runtime: 'wasmkube' },
    })
    t.equal(unnamed.status, 400, 'several tenants, none named')
    t.same(unnamed.body, { error: 'tenant: you are in several tenants, name one of red, blue' })
    const named = await create(control, both, 'shop', 'blue')
    t.equal(named.tenant, 'blue')
    const foreign = await control.call('POST', '/applications', {
      token: both,
      json: { name: 'shop', language: 'go', runtime: 'wasmkube', tenant: 'green' },
    })
    t.equal(foreign.status, 403, 'a tenant the caller is not in')
    t.same(foreign.body, { error: 'you are not in the tenant green' })
    const twice = await oidc.idToken({ claims: { groups: ['red', 'red', 7] } })
    t.equal(
      (await create(control, twice, 'twice')).tenant,
      'red',
      'a tenant named twice (and a value that is no string) is still one choice',
    )
    const blueOnly = await oidc.idToken({ claims: { groups: ['blue'] } })
    t.same(
      ((await control.call('GET', '/applications', { token: blueOnly })).body as App[]).map((a) => a.name),
      ['shop'],
      'a member of both shares with each',
    )
  },
)

t.test('an admin sees and changes every tenant and creates in any by naming it', async (t) => {
  const { oidc, control } = await setUp(t)
  const red = await oidc.idToken({ claims: { groups: ['red'] } })
  const admin = await oidc.idToken({ claims: { roles: ['platform-admin'] } })
  const redApp = await create(control, red, 'hello')
  const greenApp = await create(control, admin, 'hello', 'green')
  t.equal(greenApp.tenant, 'green', 'an admin creates in any tenant, also one nobody is in yet')
  const unnamed = await control.call('POST', '/applications', {
    token: admin,
    json: { name: 'x', language: 'go', runtime: 'wasmkube' },
  })
  t.equal(unnamed.status, 400, 'an admin in no tenant names one')
  t.same(unnamed.body, { error: 'tenant: name the tenant to create the application in' })
  t.same(
    ((await control.call('GET', '/applications', { token: admin })).body as App[]).map((a) => a.tenant).sort(),
    ['green', 'red'],
    'sees all',
  )
  const fn = await control.call('POST', `/applications/${redApp.id}/functions`, {
    token: admin,
    json: { name: 'extra' },
  })
  t.equal(fn.status, 201, "changes another tenant's application")
  t.equal((await control.call('DELETE', `/applications/${redApp.id}`, { token: admin })).status, 204, 'and deletes it')
})

t.test('a read-only member reads everything of their tenants and gets 403 on every write', async (t) => {
  const { oidc, control } = await setUp(t)
  const member = await oidc.idToken({ claims: { groups: ['red'] } })
  const viewer = await oidc.idToken({ claims: { groups: ['red'], roles: 'viewer' } })
  const app = await create(control, member, 'hello')
  const fnId = app.functions[0]?.id ?? ''
  const create403 = await control.call('POST', '/applications', {
    token: viewer,
    json: { name: 'mine', language: 'go', runtime: 'wasmkube' },
  })
  t.equal(create403.status, 403, 'create')
  t.ok(isErrorBody(create403.body))
  for (const route of routesUnder(app.id, fnId)) {
    const reply = await control.call(route.method, route.path, { token: viewer, ...pick(route) })
    if (route.write) {
      t.equal(reply.status, 403, `write: ${route.method} ${route.path}`)
      t.same(reply.body, { error: 'read-only access: this request would change something (or run code)' })
    } else {
      // What the member gets (503 where there is no cluster or Prometheus here), never 403.
      const owner = await control.call(route.method, route.path, { token: member, ...pick(route) })
      t.equal(
        reply.status,
        owner.status,
        `read: ${route.method} ${route.path} answers as for a member (${owner.status})`,
      )
    }
  }
  t.same(
    ((await control.call('GET', '/applications', { token: viewer })).body as App[]).map((a) => a.id),
    [app.id],
    'lists its tenant',
  )
  t.equal(
    ((await control.call('GET', `/applications/${app.id}`, { token: member })).body as App).functions.length,
    1,
    'nothing changed',
  )
})

t.test('without a tenant claim (and without auth) everyone is in the tenant default', async (t) => {
  const { oidc, control } = await setUp(t, [])
  const one = await oidc.idToken({ claims: { groups: ['red'] } })
  const two = await oidc.idToken()
  const app = await create(control, one, 'hello')
  t.equal(app.tenant, 'default')
  t.same(
    ((await control.call('GET', '/applications', { token: two })).body as App[]).map((a) => a.id),
    [app.id],
    'shared by everyone',
  )
  const open = await startTestControl(t, ENGINE)
  const created = await open.call('POST', '/applications', {
    json: { name: 'hello', language: 'go', runtime: 'wasmkube' },
  })
  t.equal((created.body as App).tenant, 'default', 'auth off: default')
})

t.test('applications stored before tenants belong to default and keep their name in the cluster', async (t) => {
  const store = await freshStore(t, ENGINE)
  const db = await openDatabase({
    url: store.databaseUrl,
    dataDir: store.dataDir,
    logger: { error: () => {}, warn: () => {} },
  })
  await migrate(
    db,
    migrations.filter((m) => m.version <= 2),
  )
  await db.query(
    "INSERT INTO applications (id, name, language, runtime) VALUES ('22222222-2222-4222-8222-222222222222', 'legacy', 'go', 'wasmkube')",
  )
  await migrate(db)
  t.same(await db.query('SELECT tenant, cluster_name FROM applications'), [
    { tenant: 'default', cluster_name: 'legacy' },
  ])
  await db.close()
  const oidc = await startOidcProvider()
  t.teardown(() => oidc.close())
  const control = await startTestControl(
    t,
    ENGINE,
    ['--oidc-issuer', oidc.issuer, '--oidc-audience', oidc.clientId, '--tenant-claim', 'groups'],
    { store },
  )
  const member = await oidc.idToken({ claims: { groups: ['default'] } })
  const other = await oidc.idToken({ claims: { groups: ['red'] } })
  t.same(
    ((await control.call('GET', '/applications', { token: member })).body as App[]).map((a) => [a.name, a.tenant]),
    [['legacy', 'default']],
    'a member of default sees it',
  )
  t.same((await control.call('GET', '/applications', { token: other })).body, [], 'another tenant does not')
  t.equal((await create(control, other, 'legacy')).tenant, 'red', 'and may use the name')
})

t.test(
  "in the cluster two tenants' hello never collide: own SpinApp, image and labels; deleting one leaves the other",
  async (t) => {
    const oidc = await startOidcProvider()
    t.teardown(() => oidc.close())
    // On the real API server (test/helpers/kube-apiserver.ts), with deploy/'s Role.
    const kube = realCluster(await kubeNamespace(t, tempDir(t)))
    await startKubelet(t, kube)
    const control = await startTestControl(
      t,
      ENGINE,
      [
        '--oidc-issuer',
        oidc.issuer,
        '--oidc-audience',
        oidc.clientId,
        ...ROLES,
        '--kubeconfig',
        kube.kubeconfig,
        '--namespace',
        kube.namespace,
        '--builder-images',
        BUILDERS,
        '--image-repository',
        REPOSITORY,
      ],
      { deps: { cluster: { retryMs: 20, pollMs: 20 } } },
    )
    await control.server.cluster?.watcher.ready
    const tokens = {
      red: await oidc.idToken({ claims: { groups: 'red' } }),
      blue: await oidc.idToken({ claims: { groups: 'blue' } }),
    }
    const names: Record<string, string> = {}
    for (const tenant of ['red', 'blue'] as const) {
      const token = tokens[tenant]
      const app = await create(control, token, 'hello')
      const before = new Set((await kube.list(SPINAPP)).map((o) => o.metadata.name))
      const build = (await control.call('POST', `/applications/${app.id}/builds`, { token })).body as { id: string }
      await succeedJob(kube, `build-${build.id}`)
      await until(
        async () => (await kube.list(SPINAPP)).some((o) => !before.has(o.metadata.name)),
        20_000,
        `${tenant}'s SpinApp applied`,
      )
      const spinApp = (await kube.list(SPINAPP)).find((o) => !before.has(o.metadata.name))
      names[tenant] = spinApp?.metadata.name ?? ''
      t.match(names[tenant], /^hello-[0-9a-f]{10}$/, `${tenant}: the name in the cluster is tenant-qualified`)
      t.equal(
        spinApp?.metadata.labels?.['platform.wasmkube.dev/application'],
        app.id,
        'labelled with the application id',
      )
      t.match(
        String((spinApp as { spec?: { image?: string } }).spec?.image),
        new RegExp(`^${REPOSITORY}/${names[tenant]}:`),
        'the image path too',
      )
      const described = (await control.call('GET', `/applications/${app.id}`, { token })).body as {
        deployment: { serviceName: string }
      }
      t.equal(described.deployment.serviceName, names[tenant], 'the deployment names its own Service')
    }
    t.not(names.red, names.blue, 'two SpinApps')
    const redApp = ((await control.call('GET', '/applications', { token: tokens.red })).body as App[])[0] as App
    t.equal((await control.call('DELETE', `/applications/${redApp.id}`, { token: tokens.red })).status, 204)
    t.equal(await kube.get(SPINAPP, names.red ?? ''), undefined, "red's SpinApp is gone")
    t.not(await kube.get(SPINAPP, names.blue ?? ''), undefined, "blue's stays")
  },
)

t.test(
  "the overview counts only the caller's tenants (an admin's: the platform); /metrics counts per tenant",
  async (t) => {
    // A real Prometheus: its query log says what the overview asked, and it parses every query.
    const prometheus = await startPrometheus(t, { targets: [] })
    const { control, oidc } = await setUp(t, [...ROLES, '--prometheus-url', prometheus.url])
    const both = await oidc.idToken({ claims: { groups: ['red', 'a.b|c'] } })
    const admin = await oidc.idToken({ claims: { roles: 'platform-admin' } })
    t.equal((await control.call('GET', '/overview/metrics', { token: both })).status, 200)
    const memberQueries = prometheus.queries()
    t.same(
      [...memberQueries].sort(),
      [
        'sum(rate(platform_tenant_builds_finished_total{tenant=~"red|a\\\\.b\\\\|c"}[60s]))',
        'sum(rate(platform_tenant_http_requests_total{tenant=~"red|a\\\\.b\\\\|c"}[60s]))',
      ],
      "a member: its tenants' series, names matched literally",
    )
    t.equal((await control.call('GET', '/overview/metrics', { token: admin })).status, 200)
    t.match(
      prometheus.queries().slice(memberQueries.length).sort(),
      [/^sum\(rate\(platform_builds_finished_total\[/, /^sum\(rate\(platform_http_requests_total\{/],
      "an admin: the platform's",
    )

    const app = await create(control, both, 'hello', 'red')
    await control.call('GET', `/applications/${app.id}`, { token: both })
    const exposition = await fetch(`${control.url}/metrics`).then((r) => r.text())
    t.match(
      exposition,
      /^platform_tenant_http_requests_total\{tenant="red"\} 1$/m,
      "the request under red's application counts for red",
    )
  },
)

function pick(route: { json?: unknown; body?: Buffer; headers?: Record<string, string> }): {
  json?: unknown
  body?: Buffer
  headers?: Record<string, string>
} {
  return {
    ...(route.json !== undefined ? { json: route.json } : {}),
    ...(route.body !== undefined ? { body: route.body } : {}),
    ...(route.headers !== undefined ? { headers: route.headers } : {}),
  }
}
