// GET /api/v1/me: who the caller is, as the API decides it from the token (the same claims
// domain/access.ts authorises with), for the console to offer only what the caller may do.
import { decodeJwt } from 'jose'
import t from 'tap'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { startTestControl } from '../helpers/control.js'

const ROLES = ['--tenant-claim', 'groups', '--admin-claim', 'roles=platform-admin', '--readonly-claim', 'roles=viewer']

t.test('with roles: a member, an admin and a read-only caller each get their own answer', async (t) => {
  const oidc = await startOidcProvider()
  t.teardown(() => oidc.close())
  const control = await startTestControl(t, 'pglite', [
    '--oidc-issuer',
    oidc.issuer,
    '--oidc-audience',
    oidc.clientId,
    ...ROLES,
  ])

  const member = await oidc.idToken({ claims: { groups: ['red', 'blue'] } })
  const answer = await control.call('GET', '/me', { token: member })
  t.equal(answer.status, 200)
  t.same(
    answer.body,
    { subject: decodeJwt(member).sub, role: 'member', tenants: ['red', 'blue'], allTenants: false },
    'a member of two tenants',
  )

  const admin = await oidc.idToken({ claims: { roles: ['platform-admin'] } })
  t.same(
    (await control.call('GET', '/me', { token: admin })).body,
    { subject: decodeJwt(admin).sub, role: 'admin', tenants: [], allTenants: true },
    'an admin in no tenant sees them all',
  )

  const viewer = await oidc.idToken({ claims: { groups: 'red', roles: ['viewer'] } })
  t.same(
    (await control.call('GET', '/me', { token: viewer })).body,
    { subject: decodeJwt(viewer).sub, role: 'read-only', tenants: ['red'], allTenants: false },
    'a read-only caller may still ask who they are',
  )
  t.equal(
    (
      await control.call('POST', '/applications', {
        token: viewer,
        json: { name: 'hello', language: 'js', runtime: 'wasmkube' },
      })
    ).status,
    403,
    'and what /me says holds: the write is refused',
  )

  t.equal((await control.call('GET', '/me')).status, 401, 'without a token: 401, like every API route')
})

t.test('without roles every signed-in caller is a member of the default tenant', async (t) => {
  const oidc = await startOidcProvider()
  t.teardown(() => oidc.close())
  const control = await startTestControl(t, 'pglite', ['--oidc-issuer', oidc.issuer, '--oidc-audience', oidc.clientId])
  const token = await oidc.idToken({ claims: { roles: ['viewer'] } })
  t.same((await control.call('GET', '/me', { token })).body, {
    subject: decodeJwt(token).sub,
    role: 'member',
    tenants: ['default'],
    allTenants: false,
  })
})

t.test('with authentication off: no subject, a member of the default tenant', async (t) => {
  const control = await startTestControl(t, 'pglite')
  t.same((await control.call('GET', '/me')).body, {
    subject: null,
    role: 'member',
    tenants: ['default'],
    allTenants: false,
  })
})

t.test('the answer is in the OpenAPI document', async (t) => {
  const control = await startTestControl(t, 'pglite')
  const doc = (await control.call('GET', '/openapi.json')).body as {
    paths: Record<string, Record<string, { operationId?: string; responses?: Record<string, unknown> }>>
  }
  t.equal(doc.paths['/api/v1/me']?.get?.operationId, 'getMe')
})
