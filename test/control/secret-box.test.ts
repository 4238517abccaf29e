// Secret variables at rest on the local runtime: AES-256-GCM sealed values bound to their
// variable, under a key from --secret-key-file or generated once (0600) into the data directory;
// a key file that is not 32 bytes of base64 stops the request with a ConfigError that never
// repeats the file's content.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { ConfigError } from '@session-relay/common/config/settings'
import { secretBox } from '@session-relay/control/store/secret-box'
import { startTestControl } from '../helpers/control.js'

function scratch(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'secret-box-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

t.test('a generated key: made once, 0600, the same for every box of the directory', async (t) => {
  const dir = scratch(t)
  const box = secretBox({ secretKeyFile: '', dataDir: dir })
  const key = readFileSync(join(dir, 'secret.key'), 'utf8')
  t.equal(Buffer.from(key.trim(), 'base64').length, 32)
  t.equal(statSync(join(dir, 'secret.key')).mode & 0o777, 0o600)
  const sealed = box.seal('value', 'app/name')
  t.not(sealed, box.seal('value', 'app/name'), 'a fresh nonce each time')
  t.notMatch(Buffer.from(sealed, 'base64').toString('latin1'), 'value', 'no clear text inside')
  t.equal(box.open(sealed, 'app/name'), 'value')
  t.equal(box.open(sealed, 'app/other'), null, 'bound to its variable')
  const tampered = Buffer.from(sealed, 'base64')
  tampered[tampered.length - 20] = (tampered[tampered.length - 20] as number) ^ 1
  t.equal(box.open(tampered.toString('base64'), 'app/name'), null, 'a changed byte does not open')
  t.equal(box.open('AQID', 'app/name'), null, 'too short to be sealed')
  t.equal(readFileSync(join(dir, 'secret.key'), 'utf8'), key, 'the key is not made again')
})

t.test('a key file: used as given; one that is not 32 bytes of base64, or missing, is refused by name', async (t) => {
  const dir = scratch(t)
  const file = join(dir, 'given.key')
  writeFileSync(file, Buffer.alloc(32, 9).toString('base64') + '\n')
  const sealed = secretBox({ secretKeyFile: file, dataDir: dir }).seal('v', 'a/b')
  const other = join(dir, 'other.key')
  writeFileSync(other, Buffer.alloc(32, 9).toString('base64'))
  t.equal(
    secretBox({ secretKeyFile: other, dataDir: dir }).open(sealed, 'a/b'),
    'v',
    'the same key in another file opens it',
  )
  const short = join(dir, 'short.key')
  writeFileSync(short, 'c2hvcnQtYW5kLXNlY3JldA==')
  t.throws(
    () => secretBox({ secretKeyFile: short, dataDir: dir }),
    new ConfigError(`the secret key ${short} is not 32 bytes of base64 (openssl rand -base64 32 makes one)`),
  )
  t.throws(() => secretBox({ secretKeyFile: join(dir, 'missing.key'), dataDir: dir }), {
    name: 'ConfigError',
    message: /^cannot read the secret key .*missing\.key/,
  })
  t.throws(() => secretBox({ secretKeyFile: '', dataDir: join(dir, 'no', 'such') }), {
    name: 'ConfigError',
    message: /^cannot create the secret key /,
  })
})

t.test('the local runtime checks its key at start: a bad one stops the start with a ConfigError', async (t) => {
  const dir = scratch(t)
  const bad = join(dir, 'bad.key')
  writeFileSync(bad, 'not a key')
  await t.rejects(
    startTestControl(t, 'pglite', ['--dev-insecure-skip-auth', '--runtime', 'local', '--secret-key-file', bad]),
    { name: 'ConfigError', message: /is not 32 bytes of base64/ },
  )
})
