// What an image holds: no dev dependencies, tests, sources, benchmarks or scripts, the paths
// its spec names, and its code owned by root.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { NODE_ABI } from './image-base.js'
import { repo } from './image-paths.js'
import { check } from './image-report.js'
import type { ImageConfig, ImageRoot } from './image-root.js'
import type { ImageSpec } from './image-running.js'

// The base carries Node 24, so this is the one binary the relay image keeps.
export const UWS_BINARY = `uws_linux_${process.arch}_${NODE_ABI}.node`

// Names the issue calls out, checked by name on top of every dev-only entry in the lockfile.
// Not ws or @types/node: the Kubernetes client depends on both at run time.
const DEV_TOOLS = ['tap', 'typescript', 'oidc-provider', 'autocannon']

// Every file under /app outside node_modules, relative to /app.
function appFiles(dir: string, base = dir): string[] {
  const files: string[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (relative(base, path) !== 'node_modules') files.push(...appFiles(path, base))
    } else {
      files.push(relative(base, path))
    }
  }
  return files
}

export function checkContents(spec: ImageSpec, root: ImageRoot, config: ImageConfig): void {
  const app = join(root.dir, config.workingDir)
  const lock = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean }>
  }
  const devOnly = Object.entries(lock.packages)
    .filter(([path, entry]) => path !== '' && entry.dev === true)
    .map(([path]) => path)
  const devPresent = devOnly.filter((path) => existsSync(join(app, path)))
  check(
    devOnly.length > 0 && devPresent.length === 0,
    `${spec.name}: none of the lockfile's ${devOnly.length} dev-only packages in node_modules`,
    devPresent.slice(0, 20),
  )
  const toolsPresent = DEV_TOOLS.filter((name) => existsSync(join(app, 'node_modules', name)))
  check(toolsPresent.length === 0, `${spec.name}: no ${DEV_TOOLS.join(', ')}`, toolsPresent)
  check(
    !existsSync(join(app, 'node_modules', '.bin', 'tsc')) && !existsSync(join(app, 'node_modules', '.bin', 'tap')),
    `${spec.name}: no tsc or tap in node_modules/.bin`,
  )

  const files = appFiles(app)
  // spin/templates/ is data: the hello-world sources new functions start with.
  const sources = files.filter(
    (file) =>
      !file.startsWith('spin/templates/') && (/\.(ts|mts|cts|tsx)$/.test(file) || /^tsconfig.*\.json$/.test(file)),
  )
  check(
    sources.length === 0,
    `${spec.name}: no TypeScript sources or tsconfig outside node_modules`,
    sources.slice(0, 20),
  )
  const unneeded = files.filter(
    (file) =>
      /^(test|bench|scripts|\.ci|\.git|deploy|coverage|data|\.cache)\//.test(file) ||
      /(^|\/)(Dockerfile[^/]*|package-lock\.json|README\.md|\.env)$/.test(file),
  )
  check(
    unneeded.length === 0,
    `${spec.name}: no tests, benchmarks, scripts, lockfile or docs in ${config.workingDir}`,
    unneeded.slice(0, 20),
  )
  const missing = spec.present.filter((path) => !existsSync(join(app, path)))
  check(missing.length === 0, `${spec.name}: holds ${spec.present.join(', ')}`, missing)
  const extra = spec.absent.filter((path) => existsSync(join(app, path)))
  check(extra.length === 0, `${spec.name}: none of ${spec.absent.join(', ')}`, extra)
  if (spec.name === 'relay') {
    const binaries = readdirSync(join(app, 'node_modules', 'uWebSockets.js'), {
      recursive: true,
      encoding: 'utf8',
    }).filter((file) => file.endsWith('.node'))
    check(
      binaries.length === 1 && binaries[0]!.endsWith(UWS_BINARY),
      `relay: the one uWebSockets.js binary its node loads (${UWS_BINARY}), not every platform's`,
      binaries,
    )
  }
  const main = statSync(join(app, spec.present[0]!))
  check(
    main.uid === 0 && (main.mode & 0o022) === 0,
    `${spec.name}: its code belongs to root and is not writable by the runtime user`,
    { uid: main.uid, mode: (main.mode & 0o777).toString(8) },
  )
}
