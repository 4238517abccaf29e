// Spin's route matching as the host applies it: exact, wildcard, precedence.
import fc from 'fast-check'
import t from 'tap'
import { compileRoutes } from '@session-relay/host/routes'

t.test('exact routes, wildcard routes and their precedence', async (t) => {
  const match = compileRoutes([
    { route: '/...', component: 'fallback' },
    { route: '/api/...', component: 'api' },
    { route: '/api/users/...', component: 'users' },
    { route: '/api/health', component: 'health' },
  ])
  t.equal(match('/api/health')?.component, 'health')
  t.equal(match('/api/health/')?.component, 'health', 'a trailing slash is the same path')
  t.equal(match('/api/healthz')?.component, 'api')
  t.equal(match('/api/users/7')?.component, 'users')
  t.same(match('/api/users/7'), { component: 'users', route: '/api/users/...', base: '/api/users', pathInfo: '/7' })
  t.equal(match('/api')?.component, 'api', '/api/... matches /api itself')
  t.equal(match('/apix')?.component, 'fallback', 'a prefix matches whole segments only')
  t.same(match('/'), { component: 'fallback', route: '/...', base: '', pathInfo: '/' })
  t.equal(compileRoutes([{ route: '/a', component: 'a' }])('/b'), null)
  t.throws(() => compileRoutes([{ route: 'a', component: 'a' }]), /does not start with \//)
})

t.test('a wildcard route matches every path below its prefix', async () => {
  const segment = fc.stringMatching(/^[a-z0-9-]{1,8}$/)
  fc.assert(fc.property(fc.array(segment, { minLength: 1, maxLength: 3 }), fc.array(segment, { maxLength: 3 }), (prefix, rest) => {
    const base = `/${prefix.join('/')}`
    const match = compileRoutes([{ route: `${base}/...`, component: 'c' }])
    const path = rest.length === 0 ? base : `${base}/${rest.join('/')}`
    const found = match(path)
    return found?.component === 'c' && found.pathInfo === path.slice(base.length)
  }), { seed: 4242, numRuns: 200 })
})
