// The token file both commands keep their logins in: on real files in a throwaway folder.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { loadTokens, saveTokens, tokenFile } from '../../login/src/token-store.js'
import type { Tokens } from '../../login/src/tokens.js'

const tokens = (access: string): Tokens => ({
  access_token: access,
  issuer: 'http://127.0.0.1:1/',
  token_endpoint: 'http://127.0.0.1:1/token',
  client_id: 'cli',
})

t.test('the file lies under XDG_CONFIG_HOME, else ~/.config, in the command own folder', async (t) => {
  t.equal(tokenFile('wasmkube', { XDG_CONFIG_HOME: '/x' }), '/x/wasmkube/tokens.json')
  t.equal(
    tokenFile('session-relay', { XDG_CONFIG_HOME: '' }),
    join(homedir(), '.config', 'session-relay', 'tokens.json'),
  )
})

t.test('saved 0600 in a 0700 folder, keyed by origin, ws:// and http:// sharing one login', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'login-store-'))
  t.teardown(() => rmSync(home, { recursive: true, force: true }))
  const file = tokenFile('session-relay', { XDG_CONFIG_HOME: home })
  t.equal(await loadTokens(file, 'http://127.0.0.1:8080'), undefined, 'no file: no login')

  await saveTokens(file, 'ws://127.0.0.1:8080/relay/abc', tokens('one'))
  await saveTokens(file, 'https://relay.example.com/', tokens('two'))
  t.equal(statSync(file).mode & 0o777, 0o600)
  t.equal(statSync(join(home, 'session-relay')).mode & 0o777, 0o700)
  t.equal((await loadTokens(file, 'http://127.0.0.1:8080/'))?.access_token, 'one')
  t.equal((await loadTokens(file, 'wss://relay.example.com'))?.access_token, 'two')
  t.same(Object.keys(JSON.parse(readFileSync(file, 'utf8')) as object).sort(), [
    'http://127.0.0.1:8080',
    'https://relay.example.com',
  ])

  // A file made readable by others is made private again by the next save.
  writeFileSync(file, readFileSync(file), { mode: 0o644 })
  await saveTokens(file, 'http://127.0.0.1:8080', tokens('three'))
  t.equal(statSync(file).mode & 0o777, 0o600)
  t.equal((await loadTokens(file, 'ws://127.0.0.1:8080'))?.access_token, 'three')
})

t.test('a file that is not JSON is an error, not an empty store that the next save overwrites', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'login-store-'))
  t.teardown(() => rmSync(home, { recursive: true, force: true }))
  const file = join(home, 'tokens.json')
  writeFileSync(file, 'not json')
  await t.rejects(loadTokens(file, 'http://127.0.0.1:8080'), SyntaxError)
  await t.rejects(saveTokens(file, 'http://127.0.0.1:8080', tokens('x')), SyntaxError)
  t.equal(readFileSync(file, 'utf8'), 'not json')
})
