// The host answers Spin's variables interface to a real component (one j2w build in this file):
// a probe function calls `get` from `fermyon:spin/variables@2.0.0` and answers what it got,
// value or the interface's error variant. Its artifact is re-locked with variables as the
// control plane would declare them (plus a default and a template with text, as Spin allows),
// and the host CLI is given values the way the shim is: SPIN_VARIABLE_<NAME> in its
// environment. The same host bounds request bodies (--max-body): 413 past it.
import { connect } from 'node:net'
import t from 'tap'
import { pullSpinApp, pushSpinApp } from '@session-relay/spin/artifact'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import { templateFiles } from '@session-relay/spin/templates'
import { runBuilder, sourceArchive, startHost } from '../helpers/spin-processes.js'

const BUILD_TIMEOUT = 240_000

const PROBE = `import { get } from 'fermyon:spin/variables@2.0.0'
addEventListener('fetch', (event) => { event.respondWith(handle(event.request)) })
async function handle (request) {
  const name = new URL(request.url).searchParams.get('name') ?? ''
  let answer
  try {
    answer = { value: get(name) }
  } catch (error) {
    answer = { error: error.payload ?? String(error) }
  }
  const body = await request.arrayBuffer()
  return new Response(JSON.stringify({ ...answer, bodyBytes: body.byteLength }), { headers: { 'content-type': 'application/json' } })
}
`

t.test('the host serves fermyon:spin/variables from the lock and SPIN_VARIABLE_*, and bounds bodies', { timeout: BUILD_TIMEOUT }, async (t) => {
  const files = templateFiles('js', 'probe')
  files['src/index.js'] = PROBE
  const archive = await sourceArchive(t, { name: 'demo', language: 'js' }, [{ name: 'probe', route: '/...', files }])
  const root = t.testdir({ image: {}, cache: {} })
  const dir = `${root}/image`
  const build = await runBuilder(t, { SOURCE_ARCHIVE: archive, IMAGE_REF: `oci-layout:${dir}:b1`, APPLICATION: 'demo', LANGUAGE: 'js', BUILD_ID: 'b1' })
  t.equal(build.code, 0, build.code === 0 ? 'the probe builds' : build.log)

  // A lock as Spin allows it: a required variable, one with a default, text around a part.
  const store = await openStore(parseRef(`oci-layout:${dir}:b1`), { dockerConfigDir: null })
  const built = await pullSpinApp(store, 'b1')
  const component = built.lockedApp.components[0]!
  const pushed = await pushSpinApp(store, 'vars', {
    lockedApp: {
      ...built.lockedApp,
      variables: { greeting: {}, colour: { default: 'blue' }, missing: {}, api_key: { secret: true } },
      components: [{ ...component, config: { greeting: '{{ greeting }}', sky: 'sky-{{ colour }}!', missing: '{{ missing }}', api_key: '{{api_key}}' } }],
    },
    wasm: new Map([[component.id, built.wasm.get(component.source.digest!)!]]),
  })
  const host = await startHost(t, ['--ref', `oci-layout:${dir}@${pushed.digest}`, '--cache-dir', `${root}/cache`, '--max-body', '1KiB'], {
    SPIN_VARIABLE_GREETING: 'hi there', SPIN_VARIABLE_API_KEY: 'sk-test-not-a-secret', SPIN_VARIABLE_UNDECLARED: 'x',
  })
  const ask = async (name: string, init?: RequestInit): Promise<unknown> => {
    const response = await fetch(`${host.url}/?name=${encodeURIComponent(name)}`, init)
    t.equal(response.status, 200)
    return response.json()
  }
  t.same(await ask('greeting'), { value: 'hi there', bodyBytes: 0 }, 'the value from SPIN_VARIABLE_GREETING')
  t.same(await ask('api_key'), { value: 'sk-test-not-a-secret', bodyBytes: 0 })
  t.same(await ask('sky'), { value: 'sky-blue!', bodyBytes: 0 }, 'the default, inside the text of the template')
  t.same(await ask('missing'), { error: { tag: 'provider', val: 'no provider resolved required variable "missing"' }, bodyBytes: 0 }, 'declared, no value, no default')
  t.same(await ask('undeclared'), { error: { tag: 'undefined', val: 'no variable for "probe"."undeclared"' }, bodyBytes: 0 }, 'a value in the environment does not declare a variable')
  t.same(await ask('Bad-Name'), { error: { tag: 'invalid-name', val: '"Bad-Name": may contain only lower-case letters, numbers, and underscores' }, bodyBytes: 0 })

  t.same(await ask('greeting', { method: 'POST', body: 'x'.repeat(1024) }), { value: 'hi there', bodyBytes: 1024 }, 'a body at the limit passes')
  const big = await fetch(`${host.url}/?name=greeting`, { method: 'POST', body: 'x'.repeat(1025) })
  t.equal(big.status, 413, 'a declared length over the limit')
  await big.body?.cancel()
  t.equal(await chunkedStatus(host.url, 64 * 1024), 413, 'a chunked body that grows past the limit')
  t.notMatch(host.output(), /sk-test-not-a-secret|hi there/, "no value in the host's log")
})

/** The status of a chunked POST of `bytes` (no content-length), sent in 4 KiB writes. */
async function chunkedStatus (url: string, bytes: number): Promise<number> {
  const { hostname, port } = new URL(url)
  const socket = connect(Number(port), hostname)
  // Listened for from the start: the host may answer and close while the loop below still
  // writes, and a 'close' emitted before a listener exists would leave this waiting forever.
  const closed = new Promise((resolve) => { socket.once('close', resolve); socket.once('end', resolve) })
  await new Promise((resolve) => socket.once('connect', resolve))
  let answer = ''
  socket.setEncoding('utf8').on('data', (chunk: string) => { answer += chunk })
  socket.on('error', () => {})
  socket.write(`POST /?name=greeting HTTP/1.1\r\nhost: ${hostname}\r\ntransfer-encoding: chunked\r\n\r\n`)
  const chunk = 'y'.repeat(4096)
  for (let sent = 0; sent < bytes && !socket.destroyed && !answer.includes('\r\n\r\n'); sent += chunk.length) {
    socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`)
    await new Promise((resolve) => setImmediate(resolve))
  }
  if (!socket.destroyed) socket.write('0\r\n\r\n')
  await closed
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)
}
