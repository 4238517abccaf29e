// Applications and functions through the HTTP API, on every engine: create, list, get, update,
// delete, the first function, validation of names, languages, runtimes, descriptions and
// routes, name and route conflicts, unknown ids and the cascade of a delete.
import t from 'tap'
import { createApp, eachEngine, firstFunction, isErrorBody, startTestControl } from '../helpers/control.js'
import type { App, Fn } from '../helpers/control.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000'

eachEngine(t, 'create an application: 201, its first function, then list and get', async (t, engine) => {
  const control = await startTestControl(t, engine)
  const before = Date.now()
  const reply = await control.call('POST', '/applications', {
    json: { name: 'shop', language: 'ts', runtime: 'wasmkube', description: 'the shop' },
  })
  t.equal(reply.status, 201)
  const app = reply.body as App & { deployment: unknown; builds: unknown[] }
  t.match(app.id, UUID, 'ids are UUIDs')
  t.match(app, {
    name: 'shop',
    language: 'ts',
    runtime: 'wasmkube',
    description: 'the shop',
    deployment: null,
    builds: [],
  })
  t.match(app.createdAt, ISO_UTC, 'createdAt is ISO 8601 in UTC')
  t.ok(Date.parse(app.createdAt) >= before - 1000 && Date.parse(app.createdAt) <= Date.now() + 1000, 'createdAt is now')
  t.equal(app.functions.length, 1, 'one function was created with it')
  const fn = firstFunction(app)
  t.same(Object.keys(fn).sort(), ['id', 'name', 'route'], 'function items are {id, name, route}')
  t.match(fn, { name: 'shop', route: '/...' }, 'named after the application, route /...')
  t.match(fn.id, UUID)

  const list = await control.call('GET', '/applications')
  t.equal(list.status, 200)
  t.same(
    list.body,
    [
      {
        id: app.id,
        name: 'shop',
        tenant: 'default',
        language: 'ts',
        runtime: 'wasmkube',
        description: 'the shop',
        createdAt: app.createdAt,
      },
    ],
    'list items: id, name, tenant, language, runtime, description, createdAt',
  )

  const got = await control.call('GET', `/applications/${app.id}`)
  t.equal(got.status, 200)
  t.same(got.body, app, 'get answers what create answered')

  const fns = await control.call('GET', `/applications/${app.id}/functions`)
  t.same(
    fns.body,
    [{ id: fn.id, name: 'shop', route: '/...', createdAt: app.createdAt }],
    'the function, created in the same transaction',
  )

  const plain = await createApp(control, 'plain')
  t.equal(plain.description, '', 'description is optional and then empty')
})

eachEngine(t, 'list: by name, empty at first', async (t, engine) => {
  const control = await startTestControl(t, engine)
  t.same((await control.call('GET', '/applications')).body, [], 'no applications yet')
  for (const name of ['zeta', 'alpha', 'mid']) await createApp(control, name)
  const names = ((await control.call('GET', '/applications')).body as App[]).map((a) => a.name)
  t.same(names, ['alpha', 'mid', 'zeta'])
})

eachEngine(t, 'application fields are validated: 400 {error} saying what is wrong', async (t, engine) => {
  const control = await startTestControl(t, engine)
  const valid = { name: 'ok', language: 'go', runtime: 'wasmkube' }
  const cases: Array<[string, unknown, RegExp]> = [
    ['an upper-case name', { ...valid, name: 'Shop' }, /^name: expected a DNS label/],
    ['a name with an underscore', { ...valid, name: 'my_app' }, /^name: expected a DNS label/],
    ['a name starting with a digit (not a Service name)', { ...valid, name: '1app' }, /^name: expected a DNS label/],
    ['a name starting with "-"', { ...valid, name: '-app' }, /^name: expected a DNS label/],
    ['a name ending with "-"', { ...valid, name: 'app-' }, /^name: expected a DNS label/],
    ['an empty name', { ...valid, name: '' }, /^name: expected a DNS label/],
    ['a 64-character name', { ...valid, name: 'a'.repeat(64) }, /^name: expected a DNS label/],
    ['a name with a dot', { ...valid, name: 'a.b' }, /^name: expected a DNS label/],
    ['a numeric name', { ...valid, name: 12 }, /^name: expected a string/],
    ['no name', { language: 'go', runtime: 'wasmkube' }, /^missing property name/],
    ['an unknown language', { ...valid, language: 'python' }, /^language: expected one of go, js, ts, rust/],
    ['no language', { name: 'ok', runtime: 'wasmkube' }, /^missing property language/],
    ['an unknown runtime', { ...valid, runtime: 'docker' }, /^runtime: expected wasmkube/],
    [
      'no name, an unknown language, a null description: every field at once',
      { language: 'python', runtime: 'wasmkube', description: null },
      /^missing property name; language: expected one of go, js, ts, rust; description: expected a string$/,
    ],
    [
      'a 1001-character description',
      { ...valid, description: 'x'.repeat(1001) },
      /^description: expected free text of at most 1000 characters/,
    ],
    ['a null description', { ...valid, description: null }, /^description: expected a string/],
    ['an unknown property', { ...valid, owner: 'me' }, /^unknown property owner/],
    ['an array body', [valid], /^body: expected an object/],
    ['a string body', 'x', /^body: expected an object/],
  ]
  for (const [what, json, reason] of cases) {
    const reply = await control.call('POST', '/applications', { json: JSON.stringify(json) })
    t.equal(reply.status, 400, what)
    t.ok(isErrorBody(reply.body), `${what}: {error}`)
    t.match((reply.body as { error: string }).error, reason, `${what}: says why`)
  }
  for (const name of ['a', 'a1', 'a-b', 'web-shop-2', 'a'.repeat(63)]) {
    t.equal(
      (await control.call('POST', '/applications', { json: { ...valid, name } })).status,
      201,
      `"${name}" is a valid name`,
    )
  }
  for (const language of ['go', 'js', 'ts', 'rust']) {
    t.equal(
      (await control.call('POST', '/applications', { json: { ...valid, name: `lang-${language}`, language } })).status,
      201,
      `${language} is a language`,
    )
  }
  t.equal(
    (await control.call('POST', '/applications', { json: { ...valid, name: 'long', description: 'x'.repeat(1000) } }))
      .status,
    201,
    '1000 characters of description',
  )
  const noRuntime = await control.call('POST', '/applications', { json: { name: 'no-runtime', language: 'js' } })
  t.equal(noRuntime.status, 201, 'runtime may be left out')
  t.match(noRuntime.body, { runtime: 'wasmkube' }, 'it defaults to the only one')
  t.equal(
    ((await control.call('GET', '/applications')).body as App[]).length,
    11,
    'none of the refused ones was stored',
  )
})

eachEngine(t, 'bad JSON and other bodies: 400, 415 and 413 with {error}', async (t, engine) => {
  const control = await startTestControl(t, engine)
  const badJson = await control.call('POST', '/applications', { json: '{"name": "x",' })
  t.equal(badJson.status, 400, 'JSON that does not parse')
  t.same(badJson.body, { error: 'body is not valid JSON' })
  const empty = await control.call('POST', '/applications', {
    body: '',
    headers: { 'content-type': 'application/json' },
  })
  t.equal(empty.status, 400, 'an empty JSON body')
  t.same(empty.body, { error: 'body is empty; expected JSON' })
  const noBody = await control.call('POST', '/applications')
  t.equal(noBody.status, 400, 'no body at all')
  t.same(noBody.body, { error: 'body: expected an object' })
  const poisoned = await control.call('POST', '/applications', {
    json: '{"name":"p","language":"go","runtime":"wasmkube","__proto__":{"x":1}}',
  })
  t.equal(poisoned.status, 400, 'a __proto__ key')
  t.ok(isErrorBody(poisoned.body))
  const text = await control.call('POST', '/applications', {
    body: 'name=x',
    headers: { 'content-type': 'text/plain' },
  })
  t.equal(text.status, 415, 'a text/plain body')
  t.same(text.body, { error: 'unsupported content type "text/plain"' })

  const huge = JSON.stringify({
    name: 'big',
    language: 'go',
    runtime: 'wasmkube',
    description: 'x'.repeat(1024 * 1024),
  })
  const tooLarge = await control.call('POST', '/applications', { json: huge })
  t.equal(tooLarge.status, 413, 'a JSON body over 1 MiB')
  t.same(tooLarge.body, { error: 'request body too large: at most 1048576 bytes' })
  t.same((await control.call('GET', '/applications')).body, [], 'nothing was created')
})

eachEngine(t, 'names are unique: 409, also under concurrent creates', async (t, engine) => {
  const control = await startTestControl(t, engine)
  await createApp(control, 'taken')
  const again = await control.call('POST', '/applications', {
    json: { name: 'taken', language: 'rust', runtime: 'wasmkube' },
  })
  t.equal(again.status, 409)
  t.same(again.body, { error: 'an application named taken already exists' })

  const racers = await Promise.all(
    Array.from({ length: 8 }, () =>
      control.call('POST', '/applications', { json: { name: 'race', language: 'go', runtime: 'wasmkube' } }),
    ),
  )
  t.same(
    racers.map((r) => r.status).sort(),
    [201, 409, 409, 409, 409, 409, 409, 409],
    'exactly one of eight concurrent creates wins',
  )
  const apps = (await control.call('GET', '/applications')).body as App[]
  t.same(
    apps.map((a) => a.name),
    ['race', 'taken'],
  )
  const functions = await control.call('GET', `/applications/${apps[0]!.id}/functions`)
  t.equal((functions.body as Fn[]).length, 1, 'the losers left no function behind')
})

eachEngine(t, 'unknown and malformed ids: 404 {error}, never 500', async (t, engine) => {
  const control = await startTestControl(t, engine)
  const app = await createApp(control)
  const fn = firstFunction(app)
  const ids = [
    UNKNOWN_ID,
    'not-a-uuid',
    '1',
    `${app.id}x`,
    app.id.toUpperCase().replace(/./, 'g'),
    "'; DROP TABLE applications; --",
  ]
  for (const id of ids) {
    const shown = encodeURIComponent(id)
    const requests: Array<[string, string, unknown?]> = [
      ['GET', `/applications/${shown}`],
      ['DELETE', `/applications/${shown}`],
      ['GET', `/applications/${shown}/functions`],
      ['POST', `/applications/${shown}/functions`, { name: 'x' }],
      ['GET', `/applications/${shown}/builds`],
      ['GET', `/applications/${app.id}/functions/${shown}`],
      ['PUT', `/applications/${app.id}/functions/${shown}`, { route: '/x' }],
      ['DELETE', `/applications/${app.id}/functions/${shown}`],
      ['GET', `/applications/${shown}/functions/${fn.id}`],
      ['GET', `/applications/${app.id}/builds/${shown}`],
    ]
    for (const [method, path, json] of requests) {
      const reply = await control.call(method, path, json === undefined ? {} : { json })
      t.equal(reply.status, 404, `${method} ${path}`)
      t.ok(isErrorBody(reply.body), `${method} ${path}: {error}`)
    }
  }
  t.same((await control.call('GET', `/applications/${UNKNOWN_ID}`)).body, { error: 'application not found' })
  t.same((await control.call('GET', `/applications/${app.id}/functions/${UNKNOWN_ID}`)).body, {
    error: 'function not found',
  })
  t.same((await control.call('GET', `/applications/${app.id}/builds/${UNKNOWN_ID}`)).body, { error: 'build not found' })
  const other = await createApp(control, 'other')
  const crossed = await control.call('GET', `/applications/${other.id}/functions/${fn.id}`)
  t.equal(crossed.status, 404, "a function is not found under another application's id")
  t.equal((await control.call('GET', `/applications/${app.id}`)).status, 200, 'nothing was deleted')
})

eachEngine(
  t,
  'functions: create (201, default route), get, list, change the route, delete (204)',
  async (t, engine) => {
    const control = await startTestControl(t, engine)
    const app = await createApp(control, 'shop')
    const created = await control.call('POST', `/applications/${app.id}/functions`, { json: { name: 'cart' } })
    t.equal(created.status, 201)
    const cart = created.body as Fn
    t.match(cart, { name: 'cart', route: '/cart/...' }, 'the route defaults to /{name}/...')
    t.same(Object.keys(cart).sort(), ['createdAt', 'id', 'name', 'route'])
    t.match(cart.createdAt, ISO_UTC)
    const withRoute = await control.call('POST', `/applications/${app.id}/functions`, {
      json: { name: 'api', route: '/api/v1/:id' },
    })
    t.equal(withRoute.status, 201)
    t.equal((withRoute.body as Fn).route, '/api/v1/:id', 'an explicit route is kept')

    t.same((await control.call('GET', `/applications/${app.id}/functions/${cart.id}`)).body, cart, 'get')
    const list = (await control.call('GET', `/applications/${app.id}/functions`)).body as Fn[]
    t.same(
      list.map((f) => f.name),
      ['api', 'cart', 'shop'],
      'list by name',
    )
    const appView = (await control.call('GET', `/applications/${app.id}`)).body as App
    t.same(
      appView.functions,
      list.map(({ id, name, route }) => ({ id, name, route })),
      'the application lists them too',
    )

    const moved = await control.call('PUT', `/applications/${app.id}/functions/${cart.id}`, {
      json: { route: '/basket/...' },
    })
    t.equal(moved.status, 200)
    t.same(moved.body, { ...cart, route: '/basket/...' }, 'PUT changes the route and nothing else')
    t.equal(
      ((await control.call('GET', `/applications/${app.id}/functions/${cart.id}`)).body as Fn).route,
      '/basket/...',
      'and it is stored',
    )

    const deleted = await control.call('DELETE', `/applications/${app.id}/functions/${cart.id}`)
    t.equal(deleted.status, 204)
    t.equal(deleted.text, '', 'no body')
    t.equal((await control.call('GET', `/applications/${app.id}/functions/${cart.id}`)).status, 404, 'gone')
    t.equal(
      (await control.call('GET', `/applications/${app.id}/functions/${cart.id}/source`)).status,
      404,
      'its source went with it',
    )
    t.equal(
      (await control.call('DELETE', `/applications/${app.id}/functions/${cart.id}`)).status,
      404,
      'deleting twice: 404',
    )
    const recreated = await control.call('POST', `/applications/${app.id}/functions`, { json: { name: 'cart' } })
    t.equal(recreated.status, 201, 'the name is free again')
    t.not((recreated.body as Fn).id, cart.id, 'with a new id')
  },
)

eachEngine(t, 'function names and routes are unique within an application only: 409', async (t, engine) => {
  const control = await startTestControl(t, engine)
  const shop = await createApp(control, 'shop')
  const blog = await createApp(control, 'blog')
  const taken = await control.call('POST', `/applications/${shop.id}/functions`, { json: { name: 'shop' } })
  t.equal(taken.status, 409, 'the first function holds the application name')
  t.same(taken.body, { error: 'this application already has a function named shop' })
  const routeTaken = await control.call('POST', `/applications/${shop.id}/functions`, {
    json: { name: 'all', route: '/...' },
  })
  t.equal(routeTaken.status, 409, 'a route another function has')
  t.same(routeTaken.body, { error: 'another function of this application already has the route /...' })
  const cart = (await control.call('POST', `/applications/${shop.id}/functions`, { json: { name: 'cart' } })).body as Fn
  const moveOnto = await control.call('PUT', `/applications/${shop.id}/functions/${cart.id}`, {
    json: { route: '/...' },
  })
  t.equal(moveOnto.status, 409, 'PUT onto a taken route')
  t.equal(
    ((await control.call('GET', `/applications/${shop.id}/functions/${cart.id}`)).body as Fn).route,
    '/cart/...',
    'the route stayed',
  )
  t.equal(
    (await control.call('PUT', `/applications/${shop.id}/functions/${cart.id}`, { json: { route: '/cart/...' } }))
      .status,
    200,
    'PUT of its own route',
  )
  t.equal(
    (await control.call('POST', `/applications/${blog.id}/functions`, { json: { name: 'cart' } })).status,
    201,
    'the same name in another application',
  )
  t.equal(
    (await control.call('POST', `/applications/${blog.id}/functions`, { json: { name: 'shop', route: '/shop/...' } }))
      .status,
    201,
    'and the same route',
  )
  const racers = await Promise.all(
    Array.from({ length: 6 }, () =>
      control.call('POST', `/applications/${blog.id}/functions`, { json: { name: 'race' } }),
    ),
  )
  t.same(racers.map((r) => r.status).sort(), [201, 409, 409, 409, 409, 409], 'one of six concurrent creates wins')
})

eachEngine(t, 'function names and routes are validated', async (t, engine) => {
  const control = await startTestControl(t, engine)
  const app = await createApp(control)
  const fn = firstFunction(app)
  const badRoutes = [
    '',
    'api',
    'api/...',
    '//',
    '/a//b',
    '/a/',
    '/a/../b',
    '/..',
    '/.',
    '/.../a',
    '/a b',
    '/a?b',
    '/a#b',
    '/%zz',
    '/a\\b',
    `/${'a'.repeat(256)}`,
    '/é',
    // Encoded dot segments and separators: a URL parser resolves %2e%2e, the API server decodes %2f.
    '/a/%2e%2e/b',
    '/a/%2E%2E/...',
    '/%2e',
    '/a/.%2E',
    '/a/%2e.',
    '/%2e%2e%2e/x',
    '/a/%2E%2e%2E',
    '/a%2fb',
    '/a%2F..',
    '/a%5cb',
    '/a/%5C',
  ]
  for (const route of badRoutes) {
    const created = await control.call('POST', `/applications/${app.id}/functions`, { json: { name: 'f', route } })
    t.equal(created.status, 400, `create with route ${JSON.stringify(route)}`)
    t.match(
      (created.body as { error: string }).error,
      /^route: expected a path starting with "\/"/,
      'says what a route is',
    )
    const updated = await control.call('PUT', `/applications/${app.id}/functions/${fn.id}`, { json: { route } })
    t.equal(updated.status, 400, `PUT route ${JSON.stringify(route)}`)
  }
  const goodRoutes = [
    '/',
    '/a',
    '/a/...',
    '/a/b/c',
    '/v1.2/items',
    '/users/:id',
    "/a-b_c~d!$&'()*+,;=:@",
    '/%20x',
    '/...x',
    '/a/....',
    `/${'a'.repeat(254)}`,
    '/v%2e1',
    '/%2e%2e.x',
    '/a/%2e%2e%2e%2e',
    '/%25',
  ]
  for (const [i, route] of goodRoutes.entries()) {
    const created = await control.call('POST', `/applications/${app.id}/functions`, { json: { name: `f${i}`, route } })
    t.equal(created.status, 201, `route ${JSON.stringify(route)} is valid`)
  }
  for (const [what, json, reason] of [
    ['a bad name', { name: 'Cart' }, /^name: expected a DNS label/],
    ['no name', { route: '/x' }, /^missing property name/],
    ['an unknown property', { name: 'x', runtime: 'wasmkube' }, /^unknown property runtime/],
  ] as const) {
    const reply = await control.call('POST', `/applications/${app.id}/functions`, { json })
    t.equal(reply.status, 400, what)
    t.match((reply.body as { error: string }).error, reason)
  }
  const noRoute = await control.call('PUT', `/applications/${app.id}/functions/${fn.id}`, { json: { name: 'x' } })
  t.equal(noRoute.status, 400, 'PUT without a route')
  t.equal(
    ((await control.call('GET', `/applications/${app.id}/functions/${fn.id}`)).body as Fn).route,
    '/...',
    'the route is unchanged',
  )
})

eachEngine(t, 'deleting an application: 204, cascades to functions, sources and builds', async (t, engine) => {
  const control = await startTestControl(t, engine)
  const doomed = await createApp(control, 'doomed')
  const kept = await createApp(control, 'kept')
  const extra = (await control.call('POST', `/applications/${doomed.id}/functions`, { json: { name: 'extra' } }))
    .body as Fn
  await control.call('PUT', `/applications/${doomed.id}/functions/${extra.id}/source`, {
    json: { files: { 'main.go': 'package main' } },
  })
  const db = control.server.db
  await db.query("INSERT INTO builds (id, application_id, status) VALUES (gen_random_uuid(), $1, 'succeeded')", [
    doomed.id,
  ])
  await db.query("INSERT INTO builds (id, application_id, status) VALUES (gen_random_uuid(), $1, 'pending')", [kept.id])
  const counts = async (): Promise<Record<string, number>> => {
    const [row] = await db.query<Record<string, number>>(`SELECT
      (SELECT count(*)::int FROM applications) AS applications, (SELECT count(*)::int FROM functions) AS functions,
      (SELECT count(*)::int FROM sources) AS sources, (SELECT count(*)::int FROM builds) AS builds`)
    return row!
  }
  t.same(await counts(), { applications: 2, functions: 3, sources: 3, builds: 2 }, 'before')

  const reply = await control.call('DELETE', `/applications/${doomed.id}`)
  t.equal(reply.status, 204)
  t.equal(reply.text, '')
  t.same(
    await counts(),
    { applications: 1, functions: 1, sources: 1, builds: 1 },
    'everything of the deleted application is gone, nothing else',
  )
  t.equal((await control.call('GET', `/applications/${doomed.id}`)).status, 404)
  t.equal((await control.call('GET', `/applications/${doomed.id}/functions/${extra.id}/source`)).status, 404)
  t.equal((await control.call('DELETE', `/applications/${doomed.id}`)).status, 404, 'deleting twice: 404')
  t.equal((await control.call('GET', `/applications/${kept.id}`)).status, 200)
  t.equal(
    (await control.call('POST', '/applications', { json: { name: 'doomed', language: 'go', runtime: 'wasmkube' } }))
      .status,
    201,
    'the name is free again',
  )
})
