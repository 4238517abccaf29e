// Fuzz stage, control plane: generated invoke requests (paths, methods, headers, bodies), source
// file maps and archive entries, sent with a real id token to a control plane on the real API
// server (test/helpers/kube-apiserver.ts), the application's pod served by an echo server at its
// IP (test/fixtures/kube-real-endpoints.ts), so every invoke goes through the API server's own
// service proxy. Whatever arrives, no answer is a 5xx (the backend is healthy throughout), the
// control plane never asks the cluster for anything but the Service's proxy while invoking (its
// audit log), a
// refused source change keeps the stored source, and no token reaches a log. Bounded: seed and run count from test/helpers/fuzz.ts.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import t from 'tap'
import { servePods, untilEndpoints } from '../fixtures/kube-real-endpoints.js'
import { realCluster, startKubelet } from '../fixtures/kube-real.js'
import { kubeNamespace } from '../helpers/kube-apiserver.js'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { tgzOf } from '../fixtures/tarballs.js'
import type { BuildT } from '@session-relay/control/model/resources'
import type { Entry } from '../fixtures/tarballs.js'
import { BUILDERS, deployRealApp, REPOSITORY, tempDir } from '../helpers/cluster.js'
import { firstFunction, startTestControl } from '../helpers/control.js'
import type { Reply } from '../helpers/control.js'
import { fuzzOptions, glued, headerName, headerValue } from '../helpers/fuzz.js'

t.test('fuzz: invoke, source maps and archives never answer 500, leave the proxy or log a token', async (t) => {
  const oidc = await startOidcProvider()
  t.teardown(() => oidc.close())
  const kube = realCluster(await kubeNamespace(t, tempDir(t)))
  await startKubelet(t, kube)
  const finished: BuildT[] = []
  const control = await startTestControl(
    t,
    'pglite',
    [
      '--oidc-issuer',
      oidc.issuer,
      '--oidc-audience',
      oidc.clientId,
      '--kubeconfig',
      kube.kubeconfig,
      '--namespace',
      kube.namespace,
      '--builder-images',
      BUILDERS,
      '--image-repository',
      REPOSITORY,
      '--log-level',
      'debug',
    ],
    { deps: { cluster: { retryMs: 20, pollMs: 20 }, onBuildFinished: (build) => finished.push(build) } },
  )
  await control.server.cluster?.watcher.ready
  const token = await oidc.idToken()
  const as = (method: string, path: string, opts: Parameters<typeof control.call>[2] = {}): Promise<Reply> =>
    control.call(method, path, { token, ...opts })

  // One application deployed, its pod's container an echo server.
  const echo = createServer((request, response) => {
    request.resume()
    request.on('end', () => response.end(JSON.stringify({ url: request.url })))
  })
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        echo.closeAllConnections()
        echo.close(() => resolve())
      }),
  )
  const app = await deployRealApp({ control, kube, finished, proxy: null, watches: null }, 'fuzzed', {
    call: { token },
    prepare: (created) =>
      as('POST', `/applications/${created.id}/functions`, { json: { name: 'api', route: '/api/...' } }),
  })
  const fn = firstFunction(app)
  await servePods(kube, 'fuzzed', `http://127.0.0.1:${(echo.address() as AddressInfo).port}`)
  await untilEndpoints(kube, 'fuzzed', 1)

  const statuses = new Map<number, number>()
  const check = (what: string, reply: Reply): void => {
    statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1)
    // The backend is healthy and the cluster reachable throughout: a 503 would be a fault too.
    if (reply.status >= 500) throw new Error(`${what} answered ${reply.status}: ${reply.text}`)
  }

  // Invoke: every request of the control plane's the API server audits meanwhile is the
  // Service's proxy, but the lists and watches its build and SpinApp watchers keep running.
  const invokePath = `/applications/${app.id}/functions/${fn.id}/invoke`
  const ours = (): Array<ReturnType<typeof kube.server.audit>[number]> =>
    kube.server.audit().filter((event) => event.user.username === kube.user)
  const seenBefore = ours().length
  const invokeRequest = fc.record(
    {
      method: fc.oneof(
        { weight: 5, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS') },
        fc.constantFrom('CONNECT', 'TRACE', 'get', ''),
        fc.string({ maxLength: 10 }),
      ),
      path: glued(
        [
          '/',
          '/..',
          '..',
          '.',
          '%2e',
          '%2E',
          '%2f',
          '%2F',
          '%5c',
          '\\',
          '//',
          '?',
          '#',
          '%',
          '%00',
          '/api',
          'secrets',
          'x',
          '@',
          ':',
        ],
        12,
      ).map((path) => `/${path}`),
      headers: fc.dictionary(headerName, fc.array(headerValue, { maxLength: 2 }), { maxKeys: 4 }),
      body: fc.option(fc.string({ maxLength: 100 })),
      bodyIsBase64: fc.option(fc.boolean()),
    },
    { requiredKeys: ['method', 'path'] },
  )
  // The shapes of the review's findings always run first; the generator explores around them.
  const known = [
    '/../../../secrets',
    '/%2e%2e/%2E%2E/%2e%2e/secrets',
    '/..%2f..%2f..%2fsecrets',
    '/a/%2f../../../../secrets',
    '/..\\..\\secrets',
    '//../../secrets',
  ]
  await fc.assert(
    fc.asyncProperty(invokeRequest, async (request) => {
      check(`invoke ${JSON.stringify(request)}`, await as('POST', invokePath, { json: request }))
    }),
    { ...fuzzOptions(), examples: known.map((path) => [{ method: 'GET', path }]) },
  )
  const strays = ours()
    .slice(seenBefore)
    .filter((event) => event.verb !== 'list' && event.verb !== 'watch')
    .filter((event) => event.objectRef?.resource !== 'services' || event.objectRef.subresource !== 'proxy')
    .map((event) => `${event.verb} ${event.requestURI}`)
  t.same(strays, [], 'invoke reached nothing in the cluster but the Service proxy')

  // Source file maps: accepted, or refused with the stored source kept.
  const sourcePath = `/applications/${app.id}/functions/${fn.id}/source`
  const kept = { 'main.go': 'package main\n' }
  const restore = async (): Promise<void> => {
    const reply = await as('PUT', sourcePath, { json: { files: kept } })
    if (reply.status !== 200) throw new Error(`restoring the kept source answered ${reply.status}`)
  }
  await restore()
  /** A source change was taken (then undone), or refused with the stored source as it was. */
  const settled = async (what: string, reply: Reply): Promise<void> => {
    check(what, reply)
    if (reply.status === 200) return await restore()
    const stored = (await as('GET', sourcePath)).body as { files: Record<string, string> }
    if (JSON.stringify(stored.files) !== JSON.stringify(kept))
      throw new Error(`${what}, refused with ${reply.status}, changed the source`)
  }
  const fileName = glued(
    ['a', 'b', '/', '.', '..', '\\', '__proto__', 'constructor', '%2e', ' ', '\0', 'é', '~', 'C:'],
    8,
  )
  const fileMap = fc.dictionary(fileName, fc.string({ maxLength: 50 }), { maxKeys: 5 })
  await fc.assert(
    fc.asyncProperty(fileMap, async (files) => {
      await settled(`source ${JSON.stringify(files)}`, await as('PUT', sourcePath, { json: { files } }))
    }),
    fuzzOptions(),
  )

  // Archives: generated entries of every type, names and link targets.
  const entry: fc.Arbitrary<Entry> = fc
    .record({
      name: fileName,
      type: fc.constantFrom('file', 'file', 'directory', 'symlink', 'link', 'character-device', 'fifo'),
      content: fc.string({ maxLength: 40 }),
      linkname: glued(['/', '..', 'etc', 'passwd', 'a', '.'], 5),
    })
    .map(({ name, type, content, linkname }) =>
      type === 'symlink' || type === 'link'
        ? { name, type, linkname }
        : type === 'file'
          ? { name, type, content }
          : { name, type },
    )
  await fc.assert(
    fc.asyncProperty(fc.array(entry, { maxLength: 5 }), async (entries) => {
      const body = await tgzOf(entries)
      await settled(
        `archive ${JSON.stringify(entries)}`,
        await as('POST', `${sourcePath}.tar.gz`, { body, headers: { 'content-type': 'application/gzip' } }),
      )
    }),
    fuzzOptions(),
  )

  // A stage whose inputs were all refused (or all taken) would pass while testing little.
  t.ok(
    statuses.has(200) && statuses.has(400),
    `inputs both taken and refused: ${JSON.stringify(Object.fromEntries(statuses))}`,
  )
  t.equal((await control.call('GET', '/healthz')).status, 200, 'the control plane still serves')
  const logs = control.logText()
  t.notOk(logs.includes(token.split('.')[2]!), 'the id token is in no log line')
  t.notOk(logs.includes(kube.token), 'nor the cluster token')
  t.notOk(
    control.logs.some((line) => Number(line.level) >= 50),
    "no error-level log line: bad input is the client's fault",
  )
})
