// Removing what the seeds directory no longer needs (builders/src/js-seed-prune.ts): other
// engines' seeds, a dead maker's work, an unfinished removal; nothing else, never through a
// link, and a removal that fails is reported and stops no other. Planted directories stand in
// for the seeds; the real maker's pruning is in js-seed.test.ts.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { pruneSeeds, removeWhole, STALE_MAKING_MS } from '@session-relay/builders/js-seed-prune'

const KEY = 'a'.repeat(64)
const OLD = ['b'.repeat(64), 'c'.repeat(64)]

async function scratch(t: Test): Promise<{ seeds: string; outside: string }> {
  const root = await mkdtemp(join(tmpdir(), 'js-seed-prune-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const seeds = join(root, 'seeds')
  const outside = join(root, 'outside')
  await mkdir(outside)
  await writeFile(join(outside, 'keep'), 'not the seeds')
  await mkdir(seeds, { mode: 0o700 })
  return { seeds, outside }
}

/** A seed-shaped directory: a home with a file, and the sums. */
async function plantSeed(dir: string): Promise<void> {
  await mkdir(join(dir, 'home', '.cache', 'wasmtime'), { recursive: true })
  await writeFile(join(dir, 'home', '.cache', 'wasmtime', 'entry'), 'code')
  await writeFile(join(dir, 'files.json'), '{}')
}

t.test("other engines' seeds, stale work and unfinished removals go; the rest stays", async (t) => {
  const { seeds, outside } = await scratch(t)
  const now = Date.now()
  await plantSeed(join(seeds, KEY))
  for (const key of OLD) await plantSeed(join(seeds, key))
  // In an old seed, a link to a directory outside: removed as a link, its target untouched.
  await symlink(outside, join(seeds, OLD[0] as string, 'home', 'link'))
  // A link with a seed's name, to the same directory: not a directory this code made.
  await symlink(outside, join(seeds, 'd'.repeat(64)))
  await writeFile(join(seeds, 'notes.txt'), 'an operator wrote this')
  await mkdir(join(seeds, 'E'.repeat(64)))
  await mkdir(join(seeds, `${'f'.repeat(63)}`))
  // A dead maker's work (untouched for longer than a maker runs), with a link out of it too.
  await plantSeed(join(seeds, '.making-Dead01'))
  await symlink(outside, join(seeds, '.making-Dead01', 'node_modules'))
  await utimes(
    join(seeds, '.making-Dead01'),
    new Date(now - STALE_MAKING_MS - 1000),
    new Date(now - STALE_MAKING_MS - 1000),
  )
  // A running maker's, and another name of the same look made by someone else.
  await plantSeed(join(seeds, '.making-Live01'))
  await mkdir(join(seeds, '.making-other'))
  await utimes(join(seeds, '.making-other'), new Date(0), new Date(0))
  await plantSeed(join(seeds, '.removing-0123456789abcdef'))

  const pruned = await pruneSeeds(seeds, KEY, now)
  t.same(pruned.failed, [])
  t.same(pruned.removed.sort(), ['.making-Dead01', '.removing-0123456789abcdef', ...OLD].sort())
  t.same(
    (await readdir(seeds)).sort(),
    ['.making-Live01', '.making-other', KEY, 'E'.repeat(64), 'd'.repeat(64), 'f'.repeat(63), 'notes.txt'].sort(),
  )
  t.equal(await readFile(join(seeds, KEY, 'home', '.cache', 'wasmtime', 'entry'), 'utf8'), 'code', 'the seed whole')
  t.same(await readdir(outside), ['keep'], "the links' target untouched")
  t.equal(await readFile(join(seeds, 'd'.repeat(64), 'keep'), 'utf8'), 'not the seeds', 'the link stays')
})

t.test('a removal that fails is reported, and the others still happen', async (t) => {
  const { seeds } = await scratch(t)
  for (const key of [KEY, ...OLD]) await plantSeed(join(seeds, key))
  // An immutable file (root may remove anything else): its seed cannot be removed.
  const stuck = join(seeds, OLD[0] as string, 'home', '.cache', 'wasmtime', 'entry')
  execFileSync('chattr', ['+i', stuck])
  let pruned
  try {
    pruned = await pruneSeeds(seeds, KEY)
  } finally {
    // Wherever it is now, so the scratch directory can go.
    execFileSync('sh', ['-c', 'find "$1" -name entry -exec chattr -i {} +', 'sh', seeds])
  }
  t.same(pruned.removed, [OLD[1]], 'the other old seed went')
  t.match(pruned.failed, [{ name: OLD[0], reason: /entry/ }])
  const away = (await readdir(seeds)).filter((name) => name.startsWith('.removing-'))
  t.equal(away.length, 1)
  t.same((await readdir(seeds)).sort(), [...away, KEY].sort(), 'renamed away whole, never half under its name')
  t.ok(existsSync(join(seeds, KEY, 'files.json')))
  t.same((await pruneSeeds(seeds, KEY)).removed, away, 'and removed by the next one')
  t.same(await readdir(seeds), [KEY])
  // Another pruner's (another control plane's) removal got there first: nothing to do.
  await t.resolves(removeWhole(join(seeds, OLD[0] as string)))
})
