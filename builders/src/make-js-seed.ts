// Makes the machine's js engine seed (js-seed.ts) when the one for this componentize-js and
// wizer is missing or unsound: builds the platform's own js template (never a tenant's source)
// as an application's build runs (the same settings, the same sandbox), into a cache in the
// seeds directory only the builder's user can reach, then seals its cache home as the seed.
// Settings: JS_ENGINE_SEEDS (the seeds directory) and the builder's own (BUILD_SANDBOX, the
// step limits). Says what it did on stdout; exits 0 when the seed is there, 1 when it is not.
// All it writes while making goes into one directory of its own in the seeds directory, which
// it names first ("working in"), so that whoever stops it can remove it (control/src/local/
// js-seed.ts); a crash's is removed by a later maker once stale (js-seed-prune.ts).
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { readSettings } from '@session-relay/common/config/settings'
import { MAKING_PREFIX } from '@session-relay/common/js-seed-making'
import { spinManifest } from '@session-relay/spin/manifest'
import { packArchive } from '@session-relay/spin/source/archive'
import { templateFiles } from '@session-relay/spin/templates'
import { buildApplication, buildToolsDir } from './build-app.js'
import { buildRequestOf } from './build-request.js'
import { settings } from './config.js'
import { sealSeed, seedProblem } from './js-seed.js'
import { engineFiles, engineSeedKey } from './js-seed-key.js'
import type { Pruned } from './js-seed-prune.js'
import { pruneSeeds, removeWhole } from './js-seed-prune.js'

const NAME = 'js-engine-seed'

async function main(): Promise<number> {
  const seeds = process.env.JS_ENGINE_SEEDS ?? ''
  if (seeds === '') {
    process.stdout.write('JS_ENGINE_SEEDS is not set\n')
    return 1
  }
  await mkdir(seeds, { recursive: true, mode: 0o700 })
  const key = await engineSeedKey(await engineFiles(buildToolsDir()))
  const problem = await seedProblem(seeds, key)
  if (problem === null) {
    process.stdout.write(`seed ${key} is there\n`)
    await prune(seeds, key)
    return 0
  }
  const making = await mkdtemp(join(seeds, MAKING_PREFIX))
  process.stdout.write(`working in ${making}\n`)
  process.stdout.write(`making seed ${key} (${problem})\n`)
  const workDir = join(making, 'work')
  try {
    await mkdir(workDir, { mode: 0o700 })
    const files: Record<string, string> = {
      'spin.toml': spinManifest({ name: NAME, language: 'js' }, [{ name: 'hello', route: '/...' }]),
    }
    for (const [path, content] of Object.entries(templateFiles('js', 'hello')))
      files[`functions/hello/${path}`] = content
    const archive = join(making, 'source.tar.gz')
    await writeFile(archive, await packArchive(files, new Date(0)))
    const cache = join(making, 'cache')
    const config = readSettings(settings, [], {
      ...process.env,
      SOURCE_ARCHIVE: archive,
      IMAGE_REF: `oci-layout:${join(making, 'image')}:seed`,
      APPLICATION: NAME,
      LANGUAGE: 'js',
      BUILD_ID: 'seed',
      DEPENDENCY_CACHE: cache,
      // The seed starts from nothing: its own build compiles the engine.
      JS_ENGINE_SEEDS: '',
    })
    await buildApplication(buildRequestOf(config, workDir, (text) => process.stdout.write(text)))
    // Sealed beside, then renamed whole: the seed's name never holds half of one, whenever
    // this maker stops.
    const sealed = join(making, 'seed')
    await sealSeed(join(cache, 'home'), sealed)
    const seed = join(seeds, key)
    // An unsound seed of the same key goes, whole: the rename needs the name free.
    await removeWhole(seed)
    await rename(sealed, seed)
    process.stdout.write(`seed ${key} made\n`)
  } catch (error) {
    process.stdout.write(`no seed: ${(error as Error).message}\n`)
    return 1
  } finally {
    await rm(making, { recursive: true, force: true })
  }
  await prune(seeds, key)
  return 0
}

/** Removes what the seed `key` makes unneeded; a failure is said (the control plane warns) and fails nothing. */
async function prune(seeds: string, key: string): Promise<void> {
  let pruned: Pruned
  try {
    pruned = await pruneSeeds(seeds, key)
  } catch (error) {
    pruned = { removed: [], failed: [{ name: seeds, reason: (error as Error).message }] }
  }
  const { removed, failed } = pruned
  for (const name of removed) process.stdout.write(`removed ${name}\n`)
  for (const { name, reason } of failed) process.stdout.write(`not removed ${name}: ${reason}\n`)
}

process.exitCode = await main()
