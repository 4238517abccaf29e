// The js engine seed maker's work name (common/src/js-seed-making.ts): what mkdtemp makes of the
// maker's prefix is a name the pattern takes, so a later maker and the control plane find and
// remove that work; names only close to it are not taken. The maker and both removers are
// tested through it in js-seed-prune.test.ts and local-js-seed-*.test.ts.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import t from 'tap'
import { MAKING_NAME, MAKING_PREFIX } from '@session-relay/common/js-seed-making'

t.test("mkdtemp's names from the prefix are the pattern's", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'js-seed-making-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  for (let n = 0; n < 20; n++) {
    const name = basename(await mkdtemp(join(dir, MAKING_PREFIX)))
    t.ok(MAKING_NAME.test(name), name)
  }
})

t.test('only that shape', async (t) => {
  for (const name of [
    '.making-Ab12C',
    '.making-Ab12Cd7',
    '.making-Ab12C.',
    'making-Ab12Cd',
    '.making-/b12Cd',
    'x.making-Ab12Cd',
  ])
    t.notOk(MAKING_NAME.test(name), name)
})
