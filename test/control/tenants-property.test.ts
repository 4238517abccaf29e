// Property: whatever sequence of operations random callers make - members of three tenants, an
// admin and a read-only member - over the API, each answer is the one a model of who may see
// and change what predicts, status and body; nobody ever sees or changes anything outside it.
// Real id tokens from the suite's OpenID provider; a fixed seed and a bounded run count.
import fc from 'fast-check'
import t from 'tap'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { startTestControl } from '../helpers/control.js'
import type { Reply } from '../helpers/control.js'

const TENANTS = ['red', 'blue', 'green'] as const
type Who = 'red' | 'blue' | 'green' | 'admin' | 'viewer'
const CALLERS: Who[] = ['red', 'blue', 'green', 'admin', 'viewer']
const NAMES = ['a', 'b']
const FUNCTIONS = ['x', 'y']
const NOWHERE = '55555555-5555-4555-8555-555555555555'

/** What the model knows of one application ever created. */
type ModelApp = {
  id: string
  name: string
  tenant: string
  alive: boolean
  functions: Map<string, string>
  firstFn: string
}

type Op =
  | { kind: 'create'; who: Who; name: string; tenant: string | undefined }
  | { kind: 'list'; who: Who }
  | { kind: 'overview'; who: Who }
  | { kind: 'onApp'; who: Who; target: number; action: AppAction; fn: string }

type AppAction =
  | 'get'
  | 'delete'
  | 'listFunctions'
  | 'createFunction'
  | 'deleteFunction'
  | 'getSource'
  | 'putSource'
  | 'listBuilds'
  | 'startBuild'
  | 'invoke'
  | 'logs'
  | 'metrics'
  | 'deploy'

const APP_ACTIONS: AppAction[] = [
  'get',
  'delete',
  'listFunctions',
  'createFunction',
  'deleteFunction',
  'getSource',
  'putSource',
  'listBuilds',
  'startBuild',
  'invoke',
  'logs',
  'metrics',
  'deploy',
]
const WRITES = new Set<AppAction>([
  'delete',
  'createFunction',
  'deleteFunction',
  'putSource',
  'startBuild',
  'invoke',
  'deploy',
])

const who = fc.constantFrom(...CALLERS)
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      who,
      name: fc.constantFrom(...NAMES),
      tenant: fc.option(fc.constantFrom(...TENANTS), { nil: undefined }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('list' as const), who }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('overview' as const), who }) },
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('onApp' as const),
      who,
      target: fc.nat({ max: 8 }),
      action: fc.constantFrom(...APP_ACTIONS),
      fn: fc.constantFrom(...FUNCTIONS),
    }),
  },
)

const sees = (caller: Who, tenant: string): boolean =>
  caller === 'admin' || (caller === 'viewer' ? tenant === 'red' : caller === tenant)
const tenantsOf = (caller: Who): string[] => (caller === 'admin' ? [] : caller === 'viewer' ? ['red'] : [caller])

class Mismatch extends Error {}

function expect(what: string, reply: Reply, status: number, body?: unknown): void {
  if (reply.status !== status) throw new Mismatch(`${what}: expected ${status}, got ${reply.status} ${reply.text}`)
  if (body !== undefined && JSON.stringify(reply.body) !== JSON.stringify(body))
    throw new Mismatch(`${what}: expected ${JSON.stringify(body)}, got ${reply.text}`)
}

t.test(
  'random callers over three tenants, an admin and a read-only member: every answer is what the model allows',
  async (t) => {
    const oidc = await startOidcProvider()
    t.teardown(() => oidc.close())
    // No runtime (a cluster that is not there): what runs code answers 503 once access allows it,
    // so the model checks who may reach each operation without building anything.
    const control = await startTestControl(t, 'pglite', [
      '--oidc-issuer',
      oidc.issuer,
      '--oidc-audience',
      oidc.clientId,
      '--tenant-claim',
      'groups',
      '--admin-claim',
      'roles=platform-admin',
      '--readonly-claim',
      'roles=viewer',
      '--runtime',
      'cluster',
    ])
    const tokens: Record<Who, string> = {
      red: await oidc.idToken({ claims: { groups: ['red'] } }),
      blue: await oidc.idToken({ claims: { groups: 'blue' } }),
      green: await oidc.idToken({ claims: { groups: ['green'] } }),
      admin: await oidc.idToken({ claims: { roles: ['platform-admin'] } }),
      viewer: await oidc.idToken({ claims: { groups: ['red'], roles: 'viewer' } }),
    }
    const as = (caller: Who, method: string, path: string, json?: unknown): Promise<Reply> =>
      control.call(method, path, { token: tokens[caller], ...(json !== undefined ? { json } : {}) })

    async function run(ops: Op[]): Promise<void> {
      await control.server.db.query('DELETE FROM applications')
      const apps: ModelApp[] = []
      for (const [step, o] of ops.entries()) {
        const what = `step ${step} ${JSON.stringify(o)}`
        if (o.kind === 'create') {
          const reply = await as(o.who, 'POST', '/applications', {
            name: o.name,
            language: 'go',
            runtime: 'wasmkube',
            ...(o.tenant === undefined ? {} : { tenant: o.tenant }),
          })
          if (o.who === 'viewer') {
            expect(what, reply, 403)
            continue
          }
          const tenant = o.tenant ?? tenantsOf(o.who)[0]
          if (tenant === undefined) {
            expect(what, reply, 400, { error: 'tenant: name the tenant to create the application in' })
            continue
          }
          if (!sees(o.who, tenant)) {
            expect(what, reply, 403, { error: `you are not in the tenant ${tenant}` })
            continue
          }
          if (apps.some((a) => a.alive && a.tenant === tenant && a.name === o.name)) {
            expect(what, reply, 409)
            continue
          }
          expect(what, reply, 201)
          const body = reply.body as {
            id: string
            tenant: string
            name: string
            functions: Array<{ id: string; name: string }>
          }
          if (body.tenant !== tenant || body.name !== o.name) throw new Mismatch(`${what}: created ${reply.text}`)
          const first = body.functions[0] as { id: string; name: string }
          apps.push({
            id: body.id,
            name: o.name,
            tenant,
            alive: true,
            functions: new Map([[first.name, first.id]]),
            firstFn: first.id,
          })
        } else if (o.kind === 'list') {
          const reply = await as(o.who, 'GET', '/applications')
          const visible = apps
            .filter((a) => a.alive && sees(o.who, a.tenant))
            .map((a) => `${a.tenant}/${a.name}/${a.id}`)
            .sort()
          expect(what, reply, 200)
          const listed = (reply.body as Array<{ id: string; name: string; tenant: string }>)
            .map((a) => `${a.tenant}/${a.name}/${a.id}`)
            .sort()
          if (JSON.stringify(listed) !== JSON.stringify(visible))
            throw new Mismatch(`${what}: listed ${JSON.stringify(listed)}, model ${JSON.stringify(visible)}`)
        } else if (o.kind === 'overview') {
          // No Prometheus here: the embedded series answer every caller (each its own tenant's).
          expect(what, await as(o.who, 'GET', '/overview/metrics'), 200)
        } else {
          const app = apps[o.target]
          const appId = app?.id ?? NOWHERE
          const fnId = app?.firstFn ?? NOWHERE
          const extraFn = app?.functions.get(o.fn) ?? NOWHERE
          const base = `/applications/${appId}`
          const requests: Record<AppAction, [string, string, unknown?]> = {
            get: ['GET', base],
            delete: ['DELETE', base],
            listFunctions: ['GET', `${base}/functions`],
            createFunction: ['POST', `${base}/functions`, { name: o.fn }],
            deleteFunction: ['DELETE', `${base}/functions/${extraFn}`],
            getSource: ['GET', `${base}/functions/${fnId}/source`],
            putSource: ['PUT', `${base}/functions/${fnId}/source`, { files: { 'main.go': `package main // ${step}` } }],
            listBuilds: ['GET', `${base}/builds`],
            startBuild: ['POST', `${base}/builds`],
            invoke: ['POST', `${base}/functions/${fnId}/invoke`, { method: 'GET', path: '/' }],
            logs: ['GET', `${base}/logs`],
            metrics: ['GET', `${base}/metrics`],
            deploy: ['POST', `${base}/deploy`],
          }
          const [method, path, json] = requests[o.action]
          const reply = await as(o.who, method, path, json)
          if (app === undefined || !app.alive) {
            expect(what, reply, 404)
            continue
          }
          if (!sees(o.who, app.tenant)) {
            expect(what, reply, 403, { error: 'this application belongs to a tenant you are not in' })
            continue
          }
          if (o.who === 'viewer' && WRITES.has(o.action)) {
            expect(what, reply, 403, { error: 'read-only access: this request would change something (or run code)' })
            continue
          }
          switch (o.action) {
            case 'get': {
              expect(what, reply, 200)
              const body = reply.body as { id: string; tenant: string; functions: Array<{ name: string }> }
              const names = body.functions.map((f) => f.name).sort()
              if (
                body.id !== app.id ||
                body.tenant !== app.tenant ||
                JSON.stringify(names) !== JSON.stringify([...app.functions.keys()].sort())
              )
                throw new Mismatch(`${what}: ${reply.text}`)
              break
            }
            case 'delete':
              expect(what, reply, 204)
              app.alive = false
              break
            case 'listFunctions':
              expect(what, reply, 200)
              break
            case 'createFunction':
              if (app.functions.has(o.fn)) {
                expect(what, reply, 409)
                break
              }
              expect(what, reply, 201)
              app.functions.set(o.fn, (reply.body as { id: string }).id)
              break
            case 'deleteFunction':
              if (!app.functions.has(o.fn)) {
                expect(what, reply, 404)
                break
              }
              expect(what, reply, 204)
              app.functions.delete(o.fn)
              break
            case 'getSource':
            case 'putSource':
            case 'listBuilds':
              expect(what, reply, 200)
              break
            // No cluster and no Prometheus in this test: allowed, these answer 503.
            case 'startBuild':
            case 'invoke':
            case 'logs':
            case 'metrics':
            case 'deploy':
              expect(what, reply, 503)
              break
          }
        }
      }
    }

    await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 30 }), run), {
      seed: 22_2026,
      numRuns: 60,
      endOnFailure: true,
    })
    t.pass('every answer matched the model')
  },
)
