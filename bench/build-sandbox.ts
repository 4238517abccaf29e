// What the build sandbox costs: each language's template built by the builder program with every
// step in its bubblewrap sandbox (BUILD_SANDBOX=bwrap, as the local runtime builds) and with the
// steps run as they are (pod, as in a builder image, where the pod is the sandbox), alternately
// in the same run, with warm dependency caches (the second build of an application). rust runs
// sandboxed only: its toolchain is a root directory the steps need as their `/`.
// Usage: npm run bench:build-sandbox -- [runs per mode, default 3] [languages, default js,go,rust]
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { packArchive } from '@session-relay/spin/source/archive'
import { spinManifest } from '@session-relay/spin/manifest'
import { templateFiles } from '@session-relay/spin/templates'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const BUILDER = join(ROOT, 'builders/dist/main.js')
const runs = Number(process.argv[2] ?? 3)
const languages = (process.argv[3] ?? 'js,go,rust').split(',') as Array<'js' | 'go' | 'rust'>

async function archive(language: 'js' | 'go' | 'rust', dir: string): Promise<string> {
  const files: Record<string, string> = {
    'spin.toml': spinManifest({ name: 'bench', language }, [{ name: 'hello', route: '/...' }]),
  }
  for (const [path, content] of Object.entries(templateFiles(language, 'hello')))
    files[`functions/hello/${path}`] = content
  const path = join(dir, `${language}.tar.gz`)
  writeFileSync(path, await packArchive(files, new Date(0)))
  return path
}

function build(language: string, source: string, sandbox: string, cache: string, out: string): number {
  const started = process.hrtime.bigint()
  const result = spawnSync(process.execPath, [BUILDER], {
    env: {
      PATH: process.env.PATH,
      SOURCE_ARCHIVE: source,
      IMAGE_REF: `oci-layout:${out}:b`,
      APPLICATION: 'bench',
      LANGUAGE: language,
      BUILD_ID: 'b',
      TERMINATION_LOG: join(out, '..', 'termination'),
      DEPENDENCY_CACHE: cache,
      BUILD_SANDBOX: sandbox,
    },
    encoding: 'utf8',
  })
  if (result.status !== 0) throw new Error(`${language} (${sandbox}) failed:\n${result.stdout}${result.stderr}`)
  return Number(process.hrtime.bigint() - started) / 1e9
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number

const dir = mkdtempSync(join(tmpdir(), 'bench-build-sandbox-'))
try {
  console.log(
    `| language | sandboxed (bwrap), median s | as they are (pod), median s | bwrap / pod, median of ${runs} pairs |`,
  )
  console.log('|---|---|---|---|')
  for (const language of languages) {
    const source = await archive(language, dir)
    const cache = join(ROOT, '.cache', `bench-${language}-deps`)
    mkdirSync(cache, { recursive: true })
    const modes = language === 'rust' ? ['bwrap'] : ['bwrap', 'pod']
    // Warm: the caches filled and the page cache holding the toolchain.
    for (const mode of modes) build(language, source, mode, cache, join(dir, 'warm'))
    const times: Record<string, number[]> = { bwrap: [], pod: [] }
    for (let run = 0; run < runs; run++)
      for (const mode of modes) times[mode]?.push(build(language, source, mode, cache, join(dir, `${mode}-${run}`)))
    const ratios = times.pod?.length
      ? (times.bwrap ?? []).map((value, index) => value / (times.pod?.[index] as number))
      : []
    const pod = times.pod?.length ? median(times.pod).toFixed(1) : '-'
    const ratio =
      ratios.length > 0
        ? `${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`
        : '-'
    console.log(`| ${language} | ${median(times.bwrap ?? []).toFixed(1)} | ${pod} | ${ratio} |`)
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
