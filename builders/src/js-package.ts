// What a js or ts function must have before its build starts: an entry file, and a package.json
// whose dependencies the builder carries (builds are offline) and whose WIT paths stay inside
// the function's directory.
import { access, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { BuildFailure } from './failure.js'
import { entryCandidates } from './languages.js'
import { witPathProblem } from './source-guard.js'

// The packages a js/ts function may depend on: the ones this builder carries.
const HTTP_WORLD_PACKAGE = '@spinframework/wasi-http-proxy'

export async function findEntry(language: 'js' | 'ts', dir: string, displayPrefix: string): Promise<string> {
  for (const candidate of entryCandidates(language)) {
    try {
      await access(join(dir, candidate))
      return candidate
    } catch {}
  }
  throw new BuildFailure(`${displayPrefix}: no entry file (${entryCandidates(language).join(' or ')})`)
}

// The http trigger's world comes from a dependency's package.json (build-tools reads the
// `witDependencies` of the function's dependencies), so a function must depend on it; every
// dependency must be one the builder carries, since nothing is installed at build time.
export async function checkPackageJson(dir: string, displayPrefix: string, builderModules: string): Promise<void> {
  let pkg: { dependencies?: Record<string, string>; config?: { witDependencies?: unknown } }
  try {
    pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as typeof pkg
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT'
    throw new BuildFailure(
      `${displayPrefix}package.json: ${missing ? 'missing' : 'not valid JSON'} (it must depend on ${HTTP_WORLD_PACKAGE})`,
    )
  }
  const worlds = pkg.config?.witDependencies ?? []
  if (!Array.isArray(worlds))
    throw new BuildFailure(`${displayPrefix}package.json: config.witDependencies must be a list`)
  for (const world of worlds as Array<{ witPath?: unknown } | null>) {
    const problem = witPathProblem(dir, world?.witPath)
    if (problem !== null) throw new BuildFailure(`${displayPrefix}package.json: config.witDependencies: ${problem}`)
  }
  const dependencies = Object.keys(pkg.dependencies ?? {})
  if (!dependencies.includes(HTTP_WORLD_PACKAGE))
    throw new BuildFailure(`${displayPrefix}package.json: dependencies must include ${HTTP_WORLD_PACKAGE}`)
  for (const dependency of dependencies) {
    try {
      await access(join(builderModules, dependency, 'package.json'))
    } catch {
      throw new BuildFailure(
        `${displayPrefix}package.json: ${dependency} is not available in the builder (builds are offline; it carries @spinframework/build-tools and ${HTTP_WORLD_PACKAGE})`,
      )
    }
  }
}
