// Function sources at their edges: file maps that cannot be unpacked as written ("a" beside
// "a/b", keys JavaScript objects reserve), archives with no files, broken and abandoned
// uploads, and request framing the HTTP parser must refuse. And the property that ties the
// two ways in together: whatever file map the API accepts comes back the same through JSON
// and through the .tar.gz download and upload.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import type { IncomingMessage } from 'node:http'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { gzipSync } from 'node:zlib'
import fc from 'fast-check'
import t from 'tap'
import type { Test } from 'tap'
import { tgzOf } from '../fixtures/tarballs.js'
import { createApp, firstFunction, isErrorBody, startTestControl } from '../helpers/control.js'
import type { Reply, TestControl } from '../helpers/control.js'
import { until, withTimeout } from '../helpers/wait.js'

type Source = { files: Record<string, string>; updatedAt: string }

async function setup(t: Test, flags?: string[]): Promise<{ control: TestControl; base: string }> {
  const control = await startTestControl(t, 'pglite', flags)
  const app = await createApp(control)
  return { control, base: `/applications/${app.id}/functions/${firstFunction(app).id}` }
}

function upload(control: TestControl, base: string, archive: Buffer, how: 'multipart' | 'raw'): Promise<Reply> {
  if (how === 'raw')
    return control.call('POST', `${base}/source.tar.gz`, {
      body: archive,
      headers: { 'content-type': 'application/gzip' },
    })
  const form = new FormData()
  form.append('archive', new Blob([archive], { type: 'application/gzip' }), 'source.tar.gz')
  return control.call('POST', `${base}/source.tar.gz`, { body: form })
}

const errorLines = (control: TestControl): Array<Record<string, unknown>> =>
  control.logs.filter((l) => (l.level as number) >= 50)

/** Sends `text` on a fresh connection; resolves with everything the server sent once it closes. */
function rawExchange(t: Test, port: number, text: string): Promise<string> {
  const socket = connect(port, '127.0.0.1')
  t.teardown(() => {
    socket.destroy()
  })
  let received = ''
  socket.setEncoding('utf8').on('data', (chunk: string) => {
    received += chunk
  })
  socket.on('error', () => {})
  socket.write(text)
  return withTimeout(
    new Promise((resolve) => socket.once('close', () => resolve(received))),
    5_000,
    'the connection to close',
  )
}

t.test(
  'a file and a directory of the same name, and reserved keys: 400 by JSON and by archive, the source kept',
  async (t) => {
    const { control, base } = await setup(t)
    const kept = (await control.call('PUT', `${base}/source`, { json: { files: { 'keep.go': 'package keep\n' } } }))
      .body as Source
    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ['"a" and "a/b"', { a: 'file', 'a/b': 'below it' }, /"a" is a file, so it cannot be a directory too/],
      ['"x/y" and "x/y/z/w"', { 'x/y': 'file', 'x/y/z/w': 'deep below it' }, /"x\/y" is a file/],
      ['"constructor"', { constructor: 'x' }, /"constructor": a name JavaScript objects reserve/],
      ['"prototype"', { prototype: 'x' }, /"prototype": a name JavaScript objects reserve/],
    ]
    for (const [what, files, reason] of cases) {
      const put = await control.call('PUT', `${base}/source`, { json: { files } })
      t.equal(put.status, 400, `${what} (JSON)`)
      t.match((put.body as { error: string }).error, reason, `${what} (JSON): says why`)
      const archive = await tgzOf(Object.entries(files).map(([name, content]) => ({ name, content })))
      for (const how of ['multipart', 'raw'] as const) {
        const reply = await upload(control, base, archive, how)
        t.equal(reply.status, 400, `${what} (${how})`)
        t.match((reply.body as { error: string }).error, reason, `${what} (${how}): says why`)
      }
    }
    // JSON.parse would make it an own key, an assignment the prototype: Fastify's parser refuses it in JSON.
    const proto = await control.call('PUT', `${base}/source`, { json: '{"files":{"__proto__":"x"}}' })
    t.equal(proto.status, 400, '"__proto__" (JSON)')
    for (const how of ['multipart', 'raw'] as const) {
      const reply = await upload(control, base, await tgzOf([{ name: '__proto__', content: 'x' }]), how)
      t.equal(reply.status, 400, `"__proto__" (${how})`)
      t.match((reply.body as { error: string }).error, /"__proto__": a name JavaScript objects reserve/)
    }
    t.same((await control.call('GET', `${base}/source`)).body, kept, 'the stored source is untouched')
  },
)

t.test('an archive without files (tar run in the wrong directory) is refused: 400, the source kept', async (t) => {
  const { control, base } = await setup(t)
  const kept = (await control.call('PUT', `${base}/source`, { json: { files: { 'keep.go': 'package keep\n' } } }))
    .body as Source
  const cases: Array<[string, Buffer]> = [
    // What `tar -czf - -C wrong-dir . | curl ...` sends when tar fails: gzip of nothing, 20 bytes.
    ['an empty gzip', gzipSync(Buffer.alloc(0))],
    ['a tar with no entries', await tgzOf([])],
    [
      'a tar of directories only',
      await tgzOf([
        { name: './', type: 'directory' },
        { name: './src/', type: 'directory' },
      ]),
    ],
  ]
  for (const [what, archive] of cases) {
    for (const how of ['multipart', 'raw'] as const) {
      const reply = await upload(control, base, archive, how)
      t.equal(reply.status, 400, `${what} (${how})`)
      t.match((reply.body as { error: string }).error, /^the archive holds no files/, `${what} (${how}): says why`)
    }
  }
  t.same((await control.call('GET', `${base}/source`)).body, kept, 'the stored source is untouched')
})

t.test('malformed multipart: 400 and no error in the log', async (t) => {
  const { control, base } = await setup(t)
  const cases: Array<[string, string]> = [
    [
      'a body that ends inside a part',
      '--XyZ\r\nContent-Disposition: form-data; name="archive"; filename="a.tgz"\r\nContent-Type: application/gzip\r\n\r\n\x1f\x8b',
    ],
    ['no boundary line at all', 'this is not multipart'],
    ['a part without headers end', '--XyZ\r\nContent-Disposition: form-data; name="archive"; filename="a.tgz"'],
  ]
  for (const [what, body] of cases) {
    const reply = await control.call('POST', `${base}/source.tar.gz`, {
      body,
      headers: { 'content-type': 'multipart/form-data; boundary=XyZ' },
    })
    t.equal(reply.status, 400, what)
    t.ok(isErrorBody(reply.body), `${what}: {error}`)
  }
  t.same(errorLines(control), [], 'no error-level log line')
})

t.test('an upload the client abandons halfway: the request ends with a debug line, no error in the log', async (t) => {
  const { control, base } = await setup(t, ['--dev-insecure-skip-auth', '--log-level', 'debug'])
  const archive = await tgzOf([{ name: 'a.txt', content: 'x'.repeat(10_000) }])
  const form =
    '--XyZ\r\nContent-Disposition: form-data; name="archive"; filename="a.tgz"\r\nContent-Type: application/gzip\r\n\r\n'
  for (const [what, head, part] of [
    ['raw', 'Content-Type: application/gzip', archive.subarray(0, 20).toString('latin1')],
    ['multipart', 'Content-Type: multipart/form-data; boundary=XyZ', form + archive.subarray(0, 20).toString('latin1')],
  ] as const) {
    const reading = new Promise<IncomingMessage>((resolve) =>
      control.server.app.server.once('request', (req: IncomingMessage) => resolve(req)),
    )
    const socket = connect(control.server.port, '127.0.0.1')
    t.teardown(() => {
      socket.destroy()
    })
    socket.on('error', () => {})
    socket.write(
      `POST /api/v1${base}/source.tar.gz HTTP/1.1\r\nHost: 127.0.0.1\r\n${head}\r\nContent-Length: 100000\r\n\r\n${part}`,
      'latin1',
    )
    const req = await withTimeout(reading, 5_000, 'the request')
    // Hang up once the handler reads the body (it pipes the request), not before it started.
    await until(() => req.listenerCount('data') > 0, 5_000, `the ${what} handler to read the body`)
    socket.destroy()
    const id = (): unknown => control.logs.findLast((l) => l.msg === 'incoming request')?.reqId
    // Fastify logs no completion for a connection that is gone: the handler's own line marks the end.
    await until(
      () => control.logs.some((l) => l.reqId === id() && (l.msg === 'upload broke off' || (l.level as number) >= 50)),
      5_000,
      `the ${what} request to end`,
    )
    t.match(
      control.logs.find((l) => l.reqId === id() && l.msg === 'upload broke off'),
      { level: 20 },
      `${what}: a debug line`,
    )
    t.same(errorLines(control), [], `${what}: no error-level log line`)
  }
})

// RFC 9112 §6.3: differing Content-Length values make the framing unknowable. Node's parser
// already answers 400; this keeps it so.
t.test('two different Content-Length headers: 400', async (t) => {
  const control = await startTestControl(t, 'pglite')
  const answer = await rawExchange(
    t,
    control.server.port,
    'POST /api/v1/applications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}abc',
  )
  t.match(answer, /^HTTP\/1\.1 400 /)
})

// Paths from the accepted alphabet and beyond it (unicode, dots, names that shadow each other).
const segment = fc.oneof(
  fc.constantFrom(
    'a',
    'b',
    'src',
    'main.go',
    '.env',
    '..x',
    'x..',
    'constructor',
    'toString',
    '__proto__',
    'prototype',
    'ünï',
    '✓',
    '-',
    ' ',
  ),
  fc.string({ minLength: 1, maxLength: 6 }),
)
const path = fc.array(segment, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/'))
const fileMap = fc.dictionary(path, fc.string({ maxLength: 20 }), { maxKeys: 6 })

t.test(
  'property: any file map the JSON API accepts comes back the same through JSON, GNU tar and the .tar.gz upload',
  async (t) => {
    const { control, base } = await setup(t)
    let accepted = 0
    await fc.assert(
      fc.asyncProperty(fileMap, async (files) => {
        const put = await control.call('PUT', `${base}/source`, { json: JSON.stringify({ files }) })
        if (put.status !== 200) return put.status === 400 && Object.keys(files).length > 0
        accepted++
        const stored = (await control.call('GET', `${base}/source`)).body as Source
        if (JSON.stringify(sorted(stored.files)) !== JSON.stringify(sorted(files))) return false
        if (Object.keys(files).length === 0) return true // an empty archive is refused on upload
        const download = await control.call('GET', `${base}/source.tar.gz`)
        // What a build does with it: GNU tar writes the files to a directory.
        if (JSON.stringify(sorted(untarred(download.body as Buffer))) !== JSON.stringify(sorted(files))) return false
        const back = await upload(control, base, download.body as Buffer, 'raw')
        return (
          back.status === 200 && JSON.stringify(sorted((back.body as Source).files)) === JSON.stringify(sorted(files))
        )
      }),
      { seed: 42, numRuns: 150 },
    )
    t.ok(accepted > 50, `most generated maps are accepted (${accepted} of 150), so the round trip is exercised`)
  },
)

/** The files GNU tar writes from `archive`, read back from the disk. */
function untarred(archive: Buffer): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'control-untar-'))
  try {
    execFileSync('tar', ['-xzf', '-', '-C', dir], { input: archive, stdio: ['pipe', 'ignore', 'ignore'] })
    const files: Record<string, string> = {}
    for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue
      const full = join(entry.parentPath, entry.name)
      files[relative(dir, full)] = readFileSync(full, 'utf8')
    }
    return files
  } catch {
    return { '(GNU tar could not extract it)': '' }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function sorted(files: Record<string, string>): Array<[string, string]> {
  return Object.keys(files)
    .sort()
    .map((key) => [key, files[key] as string])
}
