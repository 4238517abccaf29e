// Function sources through the HTTP API, on every engine: the file map (get, atomic replace,
// path and content rules, limits) and the .tar.gz download and upload (multipart and raw),
// where every refused archive must leave the stored source exactly as it was.
import { randomBytes } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import t from 'tap'
import type { Test } from 'tap'
import { templateFiles } from '@session-relay/spin/templates'
import { countedStream, filesOf, gnuTarOf, tarOf, tgzOf } from '../fixtures/tarballs.js'
import { createApp, eachEngine, firstFunction, isErrorBody, startTestControl } from '../helpers/control.js'
import type { Reply, TestControl } from '../helpers/control.js'

type Source = { files: Record<string, string>; updatedAt: string }

const SMALL_LIMIT = ['--dev-insecure-skip-auth', '--max-archive-bytes', '64KiB']

async function setup(
  t: Test,
  engine: 'pglite' | 'postgres',
  flags?: string[],
): Promise<{ control: TestControl; base: string }> {
  const control = await startTestControl(t, engine, flags)
  const app = await createApp(control)
  return { control, base: `/applications/${app.id}/functions/${firstFunction(app).id}` }
}

/** A .tar.gz of one random (incompressible) file, stored without compression: as big as it says. */
async function storedTgz(bytes: number): Promise<Buffer> {
  return gzipSync(await tarOf([{ name: 'noise', content: randomBytes(bytes) }]), { level: 0 })
}

function upload(
  control: TestControl,
  base: string,
  archive: Buffer,
  how: 'multipart' | 'raw' = 'multipart',
  field = 'archive',
): Promise<Reply> {
  if (how === 'raw')
    return control.call('POST', `${base}/source.tar.gz`, {
      body: archive,
      headers: { 'content-type': 'application/gzip' },
    })
  const form = new FormData()
  form.append(field, new Blob([archive], { type: 'application/gzip' }), 'source.tar.gz')
  return control.call('POST', `${base}/source.tar.gz`, { body: form })
}

eachEngine(
  t,
  "a new application's first function has its language's hello-world source; PUT replaces the whole map at once",
  async (t, engine) => {
    const { control, base } = await setup(t, engine)
    const fresh = await control.call('GET', `${base}/source`)
    t.equal(fresh.status, 200)
    const empty = fresh.body as Source
    t.same(empty.files, templateFiles('go', 'hello'), 'the go template, named after the function')
    t.match(empty.files['main.go'], /hello from hello/)
    t.match(empty.updatedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'updatedAt is ISO 8601 in UTC')

    const first = await control.call('PUT', `${base}/source`, {
      json: { files: { 'main.go': 'package main\n', 'go.mod': 'module hello\n' } },
    })
    t.equal(first.status, 200)
    const stored = first.body as Source
    t.same(stored.files, { 'go.mod': 'module hello\n', 'main.go': 'package main\n' })
    t.same(Object.keys(stored.files), ['go.mod', 'main.go'], 'paths in order')
    t.ok(Date.parse(stored.updatedAt) >= Date.parse(empty.updatedAt), 'updatedAt moved on')
    t.same((await control.call('GET', `${base}/source`)).body, stored, 'GET answers what PUT stored')

    const second = (
      await control.call('PUT', `${base}/source`, { json: { files: { 'lib/util.go': 'package lib\n' } } })
    ).body as Source
    t.same(
      second.files,
      { 'lib/util.go': 'package lib\n' },
      'files left out of a PUT are gone: it replaces, it does not merge',
    )
    t.ok(Date.parse(second.updatedAt) >= Date.parse(stored.updatedAt))
    t.same(
      ((await control.call('PUT', `${base}/source`, { json: { files: {} } })).body as Source).files,
      {},
      'an empty map empties it',
    )

    const unicode = {
      'docs/ünïcødé.md': '✓ — 日本語 🎉\n',
      'a b/c.txt': 'spaces are fine',
      '.hidden/.env': 'X=1',
      'x.': 'a trailing dot',
      '...': 'three dots is a name',
    }
    t.same(
      ((await control.call('PUT', `${base}/source`, { json: { files: unicode } })).body as Source).files,
      unicode,
      'unicode, spaces, dot files',
    )
  },
)

eachEngine(t, "an added function gets its application's template, named after it", async (t, engine) => {
  const control = await startTestControl(t, engine)
  const app = await createApp(control, 'shop', { language: 'ts' })
  const added = await control.call('POST', `/applications/${app.id}/functions`, { json: { name: 'cart' } })
  t.equal(added.status, 201)
  const source = (
    await control.call('GET', `/applications/${app.id}/functions/${(added.body as { id: string }).id}/source`)
  ).body as Source
  t.same(source.files, templateFiles('ts', 'cart'))
  t.match(source.files['src/index.ts'], /\$\{greeting\} from cart\\n/)
})

eachEngine(t, 'concurrent PUTs: the stored map is one of them, never a mix', async (t, engine) => {
  const { control, base } = await setup(t, engine)
  const maps = Array.from({ length: 6 }, (_, i) =>
    Object.fromEntries(Array.from({ length: 20 }, (_, j) => [`f${j}.txt`, `writer ${i}`])),
  )
  const replies = await Promise.all(maps.map((files) => control.call('PUT', `${base}/source`, { json: { files } })))
  t.same(
    replies.map((r) => r.status),
    Array(6).fill(200),
  )
  const { files } = (await control.call('GET', `${base}/source`)).body as Source
  t.equal(new Set(Object.values(files)).size, 1, 'every file from the same writer')
  t.equal(Object.keys(files).length, 20)
})

eachEngine(t, 'file paths and contents are checked: 400, the source untouched', async (t, engine) => {
  const { control, base } = await setup(t, engine)
  const kept = (await control.call('PUT', `${base}/source`, { json: { files: { 'keep.go': 'package keep' } } }))
    .body as Source
  const cases: Array<[string, unknown, RegExp]> = [
    ['a parent-directory path', { '../evil': 'x' }, /^invalid file path "..\/evil": the path contains ".."$/],
    ['a path climbing out', { 'a/../../evil': 'x' }, /the path contains ".."/],
    ['a "." part', { './a': 'x' }, /the path contains "."/],
    ['an absolute path', { '/etc/passwd': 'x' }, /the path is absolute/],
    ['a backslash', { 'a\\b': 'x' }, /contains "\\"/],
    ['a NUL in the path', { 'a\u0000b': 'x' }, /control character/],
    ['a newline in the path', { 'a\nb': 'x' }, /control character/],
    ['a line separator in the path', { 'a\u2028b': 'x' }, /control character/],
    ['a C1 control in the path', { 'a\u0085b': 'x' }, /control character/],
    ['a number under a key with a line break', { 'a\u2028b': 1 }, /^files.a\u2028b: expected a string$/],
    ['an object under a key with a newline', { 'a\nb': { x: 1 } }, /^files.a\nb: expected a string$/],
    ['an empty path', { '': 'x' }, /the path is empty/],
    ['a trailing slash', { 'dir/': 'x' }, /empty part/],
    ['a double slash', { 'a//b': 'x' }, /empty part/],
    ['a 257-character path', { ['a'.repeat(257)]: 'x' }, /longer than 256 characters/],
    // What toolchains read as their configuration: a git hook ran as root through go build.
    ['a git configuration', { '.git/config': '[core]\n' }, /^invalid file path "\.git\/config": "\.git" is read by/],
    ['a nested git directory', { 'src/.git/HEAD': 'x' }, /"\.git" is read by the build's toolchain .*at any depth/],
    ['a cargo configuration', { '.cargo/config.toml': 'x' }, /^invalid file path "\.cargo\/config\.toml"/],
    ['a package in node_modules', { 'node_modules/a/package.json': '{}' }, /"node_modules" is read/],
    ["cargo's target directory", { 'target/x': 'x' }, /"target" is read/],
    ['a go workspace', { 'go.work': 'go 1.24' }, /"go\.work" is read/],
    ['a NUL in the content', { 'a.txt': 'a\u0000b' }, /^invalid file "a.txt": the content contains a NUL character$/],
    ['a number as content', { 'a.txt': 1 }, /^files.a.txt: expected a string$/],
    ['null as content', { 'a.txt': null }, /^files.a.txt: expected a string$/],
  ]
  for (const [what, files, reason] of cases) {
    const reply = await control.call('PUT', `${base}/source`, { json: { files } })
    t.equal(reply.status, 400, what)
    t.match((reply.body as { error: string }).error, reason, `${what}: says why`)
  }
  for (const [what, raw] of [
    ['a lone surrogate in the content', '{"files":{"a.txt":"\\ud800"}}'],
    ['a lone surrogate in the path', '{"files":{"\\udc00":"x"}}'],
  ] as const) {
    const reply = await control.call('PUT', `${base}/source`, { json: raw })
    t.equal(reply.status, 400, what)
    t.match((reply.body as { error: string }).error, /not valid Unicode/, what)
  }
  for (const [what, json, reason] of [
    ['no files property', {}, /^missing property files$/],
    ['files as an array', { files: ['a'] }, /^files: expected an object$/],
    ['an extra property', { files: {}, updatedAt: 'now' }, /^unknown property updatedAt$/],
  ] as const) {
    const reply = await control.call('PUT', `${base}/source`, { json })
    t.equal(reply.status, 400, what)
    t.match((reply.body as { error: string }).error, reason, what)
  }
  t.same((await control.call('GET', `${base}/source`)).body, kept, 'every refusal left the source as it was')
})

eachEngine(t, 'source limits: 413 past the file count, the total size and the JSON body limit', async (t, engine) => {
  const { control, base } = await setup(t, engine, SMALL_LIMIT)
  const kept = (await control.call('PUT', `${base}/source`, { json: { files: { 'keep.go': 'package keep' } } }))
    .body as Source

  const tooManyFirst = await control.call('PUT', `${base}/source`, {
    json: { files: Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`f${i}`, ''])) },
  })
  t.equal(tooManyFirst.status, 413)
  t.same((await control.call('GET', `${base}/source`)).body, kept, 'a refused PUT leaves the source as it was')

  const many = Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`f${i}`, '']))
  const tooMany = await control.call('PUT', `${base}/source`, { json: { files: many } })
  t.equal(tooMany.status, 413, '1001 files')
  t.same(tooMany.body, { error: 'too many files: at most 1000' })
  delete many.f1000
  t.equal((await control.call('PUT', `${base}/source`, { json: { files: many } })).status, 200, '1000 files pass')

  const half = 'é'.repeat(16 * 1024) // 32 KiB of UTF-8 in 16 Ki characters: the limit counts bytes
  const tooBig = await control.call('PUT', `${base}/source`, { json: { files: { a: half, b: half, c: 'x' } } })
  t.equal(tooBig.status, 413, 'files adding up to one byte past --max-archive-bytes')
  t.same(tooBig.body, { error: 'source too large: the files hold more than 65536 bytes' })
  t.equal(
    (await control.call('PUT', `${base}/source`, { json: { files: { a: half, b: half } } })).status,
    200,
    'exactly the limit passes',
  )

  const hugeControl = await startTestControl(t, engine)
  const app = await createApp(hugeControl)
  const hugeBase = `/applications/${app.id}/functions/${firstFunction(app).id}`
  const huge = await hugeControl.call('PUT', `${hugeBase}/source`, {
    json: { files: { big: 'x'.repeat(1024 * 1024) } },
  })
  t.equal(huge.status, 413, 'a JSON body past 1 MiB')
  t.same(huge.body, { error: 'request body too large: at most 1048576 bytes' })
  t.same(
    ((await hugeControl.call('GET', `${hugeBase}/source`)).body as Source).files,
    templateFiles('go', 'hello'),
    'nothing was stored',
  )
})

eachEngine(t, 'download: application/gzip, a tar of the files that GNU tar and tar-stream read', async (t, engine) => {
  const { control, base } = await setup(t, engine)
  const files = { 'main.go': 'package main\n', 'pkg/a/a.go': 'package a\n', 'ünï.txt': '✓' }
  await control.call('PUT', `${base}/source`, { json: { files } })
  const reply = await control.call('GET', `${base}/source.tar.gz`)
  t.equal(reply.status, 200)
  t.equal(reply.headers.get('content-type'), 'application/gzip')
  t.equal(reply.headers.get('content-disposition'), 'attachment; filename="hello.tar.gz"')
  const archive = reply.body as Buffer
  t.equal(Number(reply.headers.get('content-length')), archive.length)
  t.same(await filesOf(archive), files)

  const empty = await setup(t, engine)
  await empty.control.call('PUT', `${empty.base}/source`, { json: { files: {} } })
  t.same(
    await filesOf((await empty.control.call('GET', `${empty.base}/source.tar.gz`)).body as Buffer),
    {},
    'an empty source is an empty archive',
  )
  t.equal(
    (
      await control.call(
        'GET',
        `${base.replace(/functions\/.*/, 'functions/00000000-0000-4000-8000-000000000000')}/source.tar.gz`,
      )
    ).status,
    404,
    'unknown function',
  )
})

eachEngine(
  t,
  'upload: multipart field "archive" or a raw application/gzip body; round trip with download',
  async (t, engine) => {
    const { control, base } = await setup(t, engine)
    const files = { 'main.go': 'package main\n', 'internal/x/x.go': 'package x\n', 'README.md': '# héllo\n' }
    const multipart = await upload(control, base, gnuTarOf(files))
    t.equal(multipart.status, 200, 'multipart upload of what `tar -czf` made')
    const stored = multipart.body as Source
    t.same(stored.files, { 'README.md': '# héllo\n', 'internal/x/x.go': 'package x\n', 'main.go': 'package main\n' })
    t.same((await control.call('GET', `${base}/source`)).body, stored, 'GET source answers what the upload answered')

    const raw = await upload(control, base, await tgzOf([{ name: 'only.txt', content: 'one' }]), 'raw')
    t.equal(raw.status, 200, 'raw application/gzip body')
    t.same((raw.body as Source).files, { 'only.txt': 'one' }, 'the upload replaced the whole map')
    const xgzip = await control.call('POST', `${base}/source.tar.gz`, {
      body: await tgzOf([{ name: 'x.txt', content: 'x' }]),
      headers: { 'content-type': 'application/x-gzip' },
    })
    t.equal(xgzip.status, 200, 'application/x-gzip too')

    await control.call('PUT', `${base}/source`, { json: { files } })
    const downloaded = (await control.call('GET', `${base}/source.tar.gz`)).body as Buffer
    await control.call('PUT', `${base}/source`, { json: { files: {} } })
    t.same(
      ((await upload(control, base, downloaded)).body as Source).files,
      files,
      'a downloaded archive uploads back to the same files',
    )
  },
)

eachEngine(t, 'refused uploads: the right status, {error}, and the stored source untouched', async (t, engine) => {
  const { control, base } = await setup(t, engine, SMALL_LIMIT)
  const kept = (await control.call('PUT', `${base}/source`, { json: { files: { 'keep.go': 'package keep\n' } } }))
    .body as Source
  const tarball = await tarOf([{ name: 'a.txt', content: 'x' }])
  const zeros = gzipSync(await tarOf([{ name: 'zeros', content: Buffer.alloc(64 * 1024 * 1024, 0x30) }]), { level: 9 })
  const cases: Array<[string, Buffer, number, RegExp]> = [
    [
      'path traversal',
      await tgzOf([
        { name: 'ok.txt', content: 'x' },
        { name: '../../etc/cron.d/evil', content: 'x' },
      ]),
      400,
      /the path contains ".."/,
    ],
    ['an absolute path', await tgzOf([{ name: '/etc/passwd', content: 'x' }]), 400, /the path is absolute/],
    ['a symlink', await tgzOf([{ name: 'link', type: 'symlink', linkname: '/etc/shadow' }]), 400, /is a link/],
    [
      'a hard link',
      await tgzOf([
        { name: 'a', content: 'x' },
        { name: 'b', type: 'link', linkname: '/etc/shadow' },
      ]),
      400,
      /is a link/,
    ],
    ['a device', await tgzOf([{ name: 'dev', type: 'character-device' }]), 400, /is a character-device/],
    [
      'a git hook beside the code',
      await tgzOf([
        { name: 'main.go', content: 'package main' },
        { name: '.git/config', content: '[core]\n\tfsmonitor = "id"\n' },
      ]),
      400,
      /^invalid file path "\.git\/config": "\.git" is read by the build's toolchain/,
    ],
    [
      'too many files',
      await tgzOf(Array.from({ length: 1001 }, (_, i) => ({ name: `f${i}`, content: '' }))),
      413,
      /too many files: at most 1000/,
    ],
    [
      'more bytes than the limit',
      await tgzOf([
        {
          name: 'a',
          content: randomBytes(40 * 1024)
            .toString('hex')
            .slice(0, 70 * 1024),
        },
      ]),
      413,
      /unpacks to more than 65536 bytes/,
    ],
    ['a gzip bomb (64 MiB of zeros)', zeros, 413, /unpacks to more than 65536 bytes/],
    [
      'an upload past the compressed limit',
      await storedTgz(100 * 1024),
      413,
      /archive too large: more than 65536 bytes/,
    ],
    ['not gzip', tarball, 400, /^not a valid gzip file/],
    ['gzip but not tar', gzipSync(Buffer.from('hello '.repeat(200))), 400, /^not a valid tar archive/],
    [
      'non-UTF-8 content',
      await tgzOf([{ name: 'latin1.txt', content: Buffer.from([0x63, 0x61, 0x66, 0xe9]) }]),
      400,
      /not UTF-8 text/,
    ],
    ['a NUL in the content', await tgzOf([{ name: 'nul.txt', content: 'a\u0000b' }]), 400, /NUL/],
  ]
  for (const [what, archive, status, reason] of cases) {
    for (const how of ['multipart', 'raw'] as const) {
      const reply = await upload(control, base, archive, how)
      t.equal(reply.status, status, `${what} (${how})`)
      t.ok(isErrorBody(reply.body), `${what} (${how}): {error}`)
      t.match((reply.body as { error: string }).error, reason, `${what} (${how}): says why`)
      t.same(
        (await control.call('GET', `${base}/source`)).body,
        kept,
        `${what} (${how}): the stored source is untouched`,
      )
    }
  }
  const wrongField = await upload(control, base, await tgzOf([{ name: 'a', content: 'x' }]), 'multipart', 'file')
  t.equal(wrongField.status, 400, 'a multipart file in another field')
  t.same(wrongField.body, { error: 'expected the archive in the multipart file field "archive"' })
  const form = new FormData()
  form.append('archive', 'just a text field')
  t.equal(
    (await control.call('POST', `${base}/source.tar.gz`, { body: form })).status,
    400,
    'a multipart text field, no file',
  )
  const json = await control.call('POST', `${base}/source.tar.gz`, { json: { files: {} } })
  t.equal(json.status, 415, 'a JSON body')
  t.match((json.body as { error: string }).error, /multipart\/form-data.*application\/gzip/)
  const unknown = await upload(
    control,
    base.replace(/functions\/.*/, 'functions/00000000-0000-4000-8000-000000000000'),
    await tgzOf([]),
  )
  t.equal(unknown.status, 404, 'an unknown function')
  t.same((await control.call('GET', `${base}/source`)).body, kept, 'still untouched')
})

eachEngine(t, 'a refused upload ends the connection instead of reading the rest of the body', async (t, engine) => {
  const { control, base } = await setup(t, engine, SMALL_LIMIT)
  // 32 MiB sent as a stream: the refusal comes after 64 KiB, and the connection ends before
  // the rest fits into the socket buffers.
  const size = 32 * 1024 * 1024
  const body = countedStream(await storedTgz(size), 16 * 1024)
  const response = await fetch(`${control.url}/api/v1${base}/source.tar.gz`, {
    method: 'POST',
    headers: { 'content-type': 'application/gzip' },
    body: body.stream,
    duplex: 'half',
  })
  t.equal(response.status, 413)
  t.equal(response.headers.get('connection'), 'close')
  t.same(await response.json(), { error: 'archive too large: more than 65536 bytes' })
  t.ok(body.taken() < size / 2, `the server stopped reading: ${body.taken()} of ${size} bytes were sent`)
})
