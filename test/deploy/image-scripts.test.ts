// The pure parts of `npm run test:images` (the script itself runs in CI after `npm test`, as
// root): which apt mirror debootstrap uses, how an image's USER and ENV are read, and the
// order in which undo steps run.
import t from 'tap'
import { mirrorIn } from '../../scripts/image-base.js'
import { undoStack } from '../../scripts/image-host.js'
import { imageEnv, numericUser } from '../../scripts/image-root.js'
import type { ImageConfig } from '../../scripts/image-root.js'

t.test("the apt mirror: one-line and deb822 sources, a release's own archive only", async (t) => {
  t.equal(mirrorIn(['deb http://mirror.example.org/debian/ bookworm main\n']), 'http://mirror.example.org/debian')
  t.equal(
    mirrorIn([
      '# comment\ndeb [signed-by=/usr/share/keyrings/k.gpg] https://m.example.org/debian bookworm main contrib\n',
    ]),
    'https://m.example.org/debian',
  )
  t.equal(
    mirrorIn(['deb http://old.example.org/debian bullseye main\n']),
    'http://old.example.org/debian',
    "any release's archive serves trixie too",
  )
  t.equal(
    mirrorIn(['deb http://sec.example.org/debian-security bookworm-security main\n']),
    null,
    'bookworm-security is not bookworm',
  )
  const deb822 = [
    'Types: deb',
    'URIs: http://deb.example.org/debian',
    'Suites: bookworm bookworm-updates',
    'Components: main',
    '',
    'Types: deb',
    'URIs: http://deb.example.org/debian-security',
    'Suites: bookworm-security',
    'Components: main',
  ].join('\n')
  t.equal(mirrorIn([deb822]), 'http://deb.example.org/debian')
  t.equal(
    mirrorIn(['Types: deb-src\nURIs: http://src.example.org/debian\nSuites: bookworm\n']),
    null,
    'source packages only: no mirror',
  )
  t.equal(
    mirrorIn(['deb http://sec.example.org/debian-security bookworm-security main\n', deb822]),
    'http://deb.example.org/debian',
    'the first file that has one',
  )
})

t.test('USER must be numeric for runAsNonRoot to verify it', async (t) => {
  t.same(numericUser('10001:10001'), { uid: 10001, gid: 10001 })
  t.same(numericUser('10001'), { uid: 10001, gid: 10001 }, "no group: the uid's own")
  t.same(numericUser('0:0'), { uid: 0, gid: 0 }, 'root parses; the caller refuses it')
  t.equal(numericUser('node'), null)
  t.equal(numericUser('node:node'), null)
  t.equal(numericUser(''), null)
})

t.test("the environment: the image's ENV, HOME=/ as runtimes set it, overrides on top", async (t) => {
  const config = { env: ['PATH=/usr/local/bin:/usr/bin', 'RELAY_ADDR=:8080', 'EQUALS=a=b'] } as ImageConfig
  t.same(imageEnv(config, { RELAY_ADDR: '127.0.0.1:1234', RELAY_NO_AUTH: 'true' }).sort(), [
    'EQUALS=a=b',
    'HOME=/',
    'PATH=/usr/local/bin:/usr/bin',
    'RELAY_ADDR=127.0.0.1:1234',
    'RELAY_NO_AUTH=true',
  ])
  t.same(imageEnv({ env: ['HOME=/home/app'] } as ImageConfig, {}), ['HOME=/home/app'], "an image's own HOME wins")
})

t.test('undo steps: last first, every one even after a failure, a nested stack as one step', async (t) => {
  const ran: string[] = []
  const undo = undoStack()
  undo.push('first', () => ran.push('first'))
  const inner = undo.nested('inner')
  inner.push('inner one', () => ran.push('inner one'))
  inner.push('inner fails', () => {
    throw new Error('busy')
  })
  inner.push('inner two', () => ran.push('inner two'))
  undo.push('last', () => ran.push('last'))
  t.same(undo.unwind(), ['inner: inner fails: busy'], 'the failure is reported with where it happened')
  t.same(ran, ['last', 'inner two', 'inner one', 'first'])
  t.same(undo.unwind(), [], 'a second unwind runs nothing again')
  t.same(inner.unwind(), [], 'nor does the nested one')
  t.same(ran.length, 4)
})
