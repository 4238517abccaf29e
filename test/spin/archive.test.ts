// archive.ts on its own: packing, unpacking what real tools make, and every refusal, with the
// limits small enough to cross cheaply. The API tests (control-source) check the same refusals
// end to end and that they leave the stored source alone.
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import t from 'tap'
import { packArchive, unpackArchive } from '@session-relay/spin/source/archive'
import type { UnpackLimits } from '@session-relay/spin/source/archive'
import { HttpError } from '@session-relay/common/errors'
import { countedStream, filesOf, gnuTarOf, retypeFirstEntry, tarOf, tgzOf } from '../fixtures/tarballs.js'

const LIMITS: UnpackLimits = { maxFiles: 10, maxBytes: 64 * 1024, maxArchiveBytes: 32 * 1024 }

const unpack = (bytes: Buffer, limits: UnpackLimits = LIMITS): Promise<Record<string, string>> =>
  unpackArchive(Readable.from([bytes]), limits)

/** The refusal `promise` ends in: status and message. */
async function refusal(promise: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await promise
  } catch (error) {
    if (error instanceof HttpError) return { status: error.status, message: error.message }
    throw error
  }
  throw new Error('expected a refusal, got a file map')
}

t.test('pack: a .tar.gz that GNU tar reads back, regular files 0644 in path order', async (t) => {
  const files = {
    'src/main.go': 'package main\n',
    'README.md': 'héllo ✓\n',
    'a/b/c/deep.txt': '',
    [`${'d/'.repeat(60)}long.txt`]: 'long path',
  }
  const archive = await packArchive(files, new Date('2024-05-06T07:08:09Z'))
  t.equal(archive[0], 0x1f, 'gzip magic')
  t.equal(archive[1], 0x8b)
  t.same(await filesOf(archive), files, 'tar-stream reads the same files')

  const dir = mkdtempSync(join(tmpdir(), 'control-untar-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  execFileSync('tar', ['-xzf', '-', '-C', dir], { input: archive })
  for (const [path, content] of Object.entries(files))
    t.equal(readFileSync(join(dir, path), 'utf8'), content, `GNU tar extracts ${path.slice(0, 40)}`)
  const listing = execFileSync('tar', ['-tvzf', '-'], { input: archive }).toString()
  t.match(listing, /^-rw-r--r-- .* 2024-05-06 07:08 /m, 'mode 0644 and the given mtime')
  const names = execFileSync('tar', ['-tzf', '-'], { input: archive }).toString().trim().split('\n')
  t.same(names, Object.keys(files).sort(), 'in path order')
  t.same(await filesOf(await packArchive({}, new Date())), {}, 'an empty source packs to an empty archive')
})

t.test('unpack: what tar and git make, "./" prefixes, directories, pax headers, long names', async (t) => {
  const files = {
    'main.go': 'package main\n',
    'pkg/util/util.go': 'package util\n',
    'docs/ünï.md': '✓',
    [`${'x'.repeat(150)}/f`]: 'long',
  }
  t.same(await unpack(gnuTarOf(files)), files, 'tar -czf - -C dir . (with ./ and directory entries)')
  t.same(await unpack(await packArchive(files, new Date())), files, 'our own archives round-trip')

  const repo = mkdtempSync(join(tmpdir(), 'control-git-'))
  t.teardown(() => rmSync(repo, { recursive: true, force: true }))
  const git = (...args: string[]): Buffer =>
    execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args])
  git('init', '-q')
  execFileSync('sh', [
    '-c',
    `mkdir -p "${repo}/src" && printf 'fn main() {}\\n' > "${repo}/src/main.rs" && printf '[package]\\n' > "${repo}/Cargo.toml"`,
  ])
  git('add', '.')
  git('commit', '-q', '-m', 'x')
  const gitArchive = git('archive', '--format=tar.gz', 'HEAD')
  t.same(
    await unpack(gitArchive),
    { 'Cargo.toml': '[package]\n', 'src/main.rs': 'fn main() {}\n' },
    'git archive (a pax global header with the commit id)',
  )

  t.same(
    await unpack(
      await tgzOf([
        { name: 'a.txt', content: 'one' },
        { name: 'a.txt', content: 'two' },
      ]),
    ),
    { 'a.txt': 'two' },
    'a later entry replaces an earlier one, as tar extracts it',
  )
  t.same(
    await unpack(
      await tgzOf([
        { name: './', type: 'directory' },
        { name: './dir/', type: 'directory' },
      ]),
    ),
    {},
    'only directories: no files',
  )
  t.same(
    await unpack(await tgzOf([{ name: 'bom.txt', content: Buffer.from([0xef, 0xbb, 0xbf, 0x41]) }])),
    { 'bom.txt': '\ufeffA' },
    'a byte order mark is content, kept',
  )
  t.same(await unpack(gzipSync(Buffer.alloc(1024))), {}, 'an empty tar (just the end blocks)')
})

t.test(
  'unpack: one top-level folder with a manifest in it is dropped from the paths; other layouts are kept',
  async (t) => {
    const project = { 'package.json': '{}', 'src/index.js': 'x' }
    const inFolder = { 'hello/package.json': '{}', 'hello/src/index.js': 'x' }
    t.same(await unpack(gnuTarOf(inFolder)), project, 'tar -czf x.tgz -C build hello')
    t.same(
      await unpack(
        await tgzOf([
          { name: 'hello/', type: 'directory' },
          { name: 'hello/go.mod', content: 'module x' },
          { name: 'hello/main.go', content: 'package main' },
        ]),
      ),
      { 'go.mod': 'module x', 'main.go': 'package main' },
      'with its directory entry, go',
    )
    t.same(
      await unpack(gnuTarOf({ 'r/Cargo.toml': '', 'r/src/lib.rs': '' })),
      { 'Cargo.toml': '', 'src/lib.rs': '' },
      'rust',
    )
    const sourcesOnly = { 'src/index.js': 'x', 'src/util.js': 'y' }
    t.same(await unpack(gnuTarOf(sourcesOnly)), sourcesOnly, 'a folder without a manifest stays')
    const twoFolders = { 'a/package.json': '{}', 'b/x.js': '' }
    t.same(await unpack(gnuTarOf(twoFolders)), twoFolders, 'two top-level folders stay')
    t.same(await unpack(gnuTarOf(project)), project, 'a manifest at the root: as is')
  },
)

t.test('unpack refuses links, devices and paths that leave the directory: 400', async (t) => {
  const cases: Array<[string, Parameters<typeof tgzOf>[0], RegExp]> = [
    [
      'a parent-directory path',
      [{ name: '../evil.sh', content: 'x' }],
      /invalid path "..\/evil.sh" in the archive: the path contains ".."/,
    ],
    ['a path climbing out through a directory', [{ name: 'src/../../evil', content: 'x' }], /the path contains ".."/],
    ['a "./../" path', [{ name: './../evil', content: 'x' }], /the path contains ".."/],
    [
      'an absolute path',
      [{ name: '/etc/passwd', content: 'x' }],
      /invalid path "\/etc\/passwd" in the archive: the path is absolute/,
    ],
    ['".//" turning absolute', [{ name: './/etc/passwd', content: 'x' }], /the path is absolute/],
    ['a backslash path', [{ name: 'a\\..\\b', content: 'x' }], /contains "\\"/],
    ['a control character', [{ name: 'a\u0007b', content: 'x' }], /control character/],
    ['a directory named ..', [{ name: '../', type: 'directory' }], /the path contains ".."/],
    [
      'a symlink',
      [{ name: 'link', type: 'symlink', linkname: '/etc/passwd' }],
      /archive entry "link" is a link: only regular files and directories are allowed/,
    ],
    [
      'a relative symlink',
      [
        { name: 'ok.txt', content: 'x' },
        { name: 'up', type: 'symlink', linkname: '..' },
      ],
      /is a link/,
    ],
    [
      'a hard link',
      [
        { name: 'a', content: 'x' },
        { name: 'b', type: 'link', linkname: 'a' },
      ],
      /archive entry "b" is a link/,
    ],
    [
      'a character device',
      [{ name: 'null', type: 'character-device' }],
      /"null" is a character-device: only regular files and directories/,
    ],
    ['a block device', [{ name: 'sda', type: 'block-device' }], /is a block-device/],
    ['a fifo', [{ name: 'pipe', type: 'fifo' }], /is a fifo/],
    ['a file named "./" (empty path)', [{ name: './', content: 'x' }], /the path is empty/],
    ['a path past 256 characters', [{ name: 'a'.repeat(257), content: 'x' }], /longer than 256 characters/],
  ]
  for (const [what, entries, reason] of cases) {
    const refused = await refusal(unpack(await tgzOf(entries)))
    t.equal(refused.status, 400, what)
    t.match(refused.message, reason, `${what}: says why`)
  }
})

t.test('unpack refuses contents that are not text: 400', async (t) => {
  for (const [what, content, reason] of [
    [
      'Latin-1 bytes',
      Buffer.from([0x63, 0x61, 0x66, 0xe9]),
      /invalid file "f" in the archive: the content is not UTF-8 text/,
    ],
    ['a truncated UTF-8 sequence', Buffer.from([0xe2, 0x9c]), /not UTF-8 text/],
    ['an encoded surrogate (CESU-8)', Buffer.from([0xed, 0xa0, 0x80]), /not UTF-8 text/],
    ['a NUL byte', Buffer.from('a\u0000b'), /the content contains a NUL character/],
    ['a binary file', Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x00, 0xff]), /not UTF-8 text|NUL/],
  ] as const) {
    const refused = await refusal(
      unpack(
        await tgzOf([
          { name: 'ok', content: 'fine' },
          { name: 'f', content },
        ]),
      ),
    )
    t.equal(refused.status, 400, what)
    t.match(refused.message, reason, what)
  }
})

t.test('unpack refuses what is not a .tar.gz: 400', async (t) => {
  const tarball = await tarOf([{ name: 'a', content: 'x' }])
  const gz = gzipSync(tarball)
  for (const [what, bytes, reason] of [
    ['an uncompressed tar', tarball, /^not a valid gzip file/],
    ['plain text', Buffer.from('hello, world'), /^not a valid gzip file/],
    ['a zip file', Buffer.from('504b0304140000000800', 'hex'), /^not a valid gzip file/],
    ['nothing at all', Buffer.alloc(0), /^not a valid gzip file/],
    ['a truncated gzip', gz.subarray(0, gz.length - 12), /^not a valid (gzip file|tar archive)/],
    [
      'gzip of something that is not a tar',
      gzipSync(Buffer.from('just some text, not a tar header at all'.repeat(20))),
      /^not a valid tar archive/,
    ],
    ['a tar cut off mid-entry', gzipSync(tarball.subarray(0, 700)), /^not a valid tar archive/],
  ] as const) {
    const refused = await refusal(unpack(bytes))
    t.equal(refused.status, 400, what)
    t.match(refused.message, reason, what)
  }
})

t.test('unpack limits: too many files, too many bytes, too large an upload: 413', async (t) => {
  const eleven = Array.from({ length: 11 }, (_, i) => ({ name: `f${i}`, content: 'x' }))
  t.match(
    await refusal(unpack(await tgzOf(eleven))),
    { status: 413, message: 'too many files: at most 10' },
    '11 files with a limit of 10',
  )
  t.same(Object.keys(await unpack(await tgzOf(eleven.slice(0, 10)))).length, 10, '10 files pass')
  const dirs = Array.from({ length: 21 }, (_, i) => ({ name: `d${i}/`, type: 'directory' as const }))
  t.match(
    await refusal(unpack(await tgzOf(dirs))),
    { status: 413, message: 'too many files: at most 10' },
    'entries count directories too (twice the file limit)',
  )

  const big = (bytes: number): Buffer => Buffer.alloc(bytes, 'a')
  t.match(
    await refusal(
      unpack(
        await tgzOf([
          { name: 'a', content: big(40 * 1024) },
          { name: 'b', content: big(30 * 1024) },
        ]),
      ),
    ),
    { status: 413, message: 'archive unpacks to more than 65536 bytes' },
    'files adding up past the limit',
  )
  t.same(
    Object.keys(
      await unpack(
        await tgzOf([
          { name: 'a', content: big(32 * 1024) },
          { name: 'b', content: big(32 * 1024) },
        ]),
      ),
    ),
    ['a', 'b'],
    'exactly the limit passes',
  )

  const incompressible = await tgzOf([{ name: 'noise', content: randomBytes(40 * 1024) }])
  t.ok(incompressible.length > LIMITS.maxArchiveBytes, 'precondition: the upload is past the compressed limit')
  t.match(
    await refusal(unpack(incompressible)),
    { status: 413, message: 'archive too large: more than 32768 bytes' },
    'an upload past the compressed limit',
  )
})

t.test('a gzip bomb is refused after inflating little more than the limit, reading little input', async (t) => {
  const inflatedSize = 256 * 1024 * 1024
  const bomb = gzipSync(await tarOf([{ name: 'zeros', content: Buffer.alloc(inflatedSize, 0x30) }]), { level: 9 })
  t.ok(bomb.length < 512 * 1024, `precondition: 256 MiB compress to ${bomb.length} bytes`)
  const limits = { ...LIMITS, maxArchiveBytes: 1024 * 1024 }
  const input = countedStream(bomb, 1024)
  const refused = await refusal(unpackArchive(input.stream, limits))
  t.match(refused, { status: 413, message: 'archive unpacks to more than 65536 bytes' })
  // Reading a quarter of the input at most means inflating at most a quarter of the 256 MiB.
  t.ok(
    input.taken() < bomb.length / 4,
    `stopped reading the upload early, so never inflated the 256 MiB: ${input.taken()} of ${bomb.length} bytes`,
  )
  t.equal(input.stream.isPaused(), true, 'the input is left paused, not drained')

  // tar readers skip zero blocks: a small archive trailed by 256 MiB of them would keep the
  // inflater busy after the last file unless the inflated total is capped too.
  const padded = gzipSync(Buffer.concat([await tarOf([{ name: 'a', content: 'x' }]), Buffer.alloc(inflatedSize)]), {
    level: 9,
  })
  const paddedInput = countedStream(padded, 1024)
  t.match(
    await refusal(unpackArchive(paddedInput.stream, limits)),
    { status: 413, message: 'archive unpacks to more than 65536 bytes' },
    'a tiny archive trailed by 256 MiB of zero blocks',
  )
  t.ok(
    paddedInput.taken() < padded.length / 4,
    `stopped early there too: ${paddedInput.taken()} of ${padded.length} bytes`,
  )

  const paxBomb = retypeFirstEntry(
    await tarOf([
      { name: 'pax', content: Buffer.alloc(8 * 1024 * 1024, 0x30) },
      { name: 'a', content: 'x' },
    ]),
    'x',
  )
  t.match(
    await refusal(unpack(gzipSync(paxBomb), limits)),
    { status: 400, message: /^not a valid tar archive: Header exceeds max size/ },
    'an 8 MiB pax header (tar-stream refuses headers past its own cap)',
  )
})
