// A build sees its own source and the builder's packages, nothing else: esbuild would bundle any
// file the builder can read (an absolute path, `../..`, a JSON or `with { type: 'text' }`
// import of the control plane's secret.key or /proc/self/environ), and build-tools reads the
// WIT at every `witPath` a package.json names. Each import is resolved first and refused when
// its real path (symbolic links followed) leaves the function's directory and the builder's
// node_modules, before esbuild reads it; each witPath must be a relative path inside the
// function's directory.
import { realpathSync } from 'node:fs'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import type { Plugin } from 'esbuild'

function within(root: string, path: string): boolean {
  const rest = relative(root, path)
  return rest === '' || (!rest.startsWith(`..${sep}`) && rest !== '..' && !isAbsolute(rest))
}

function real(path: string): string {
  try {
    return realpathSync(path)
  } catch {
    // Not there (yet): judged by where it would be.
    return resolve(path)
  }
}

/** Why `witPath` (from a package.json in `dir`) is refused, or null. */
export function witPathProblem(dir: string, witPath: unknown): string | null {
  if (typeof witPath !== 'string' || witPath === '') return 'witPath must be a relative path inside the function'
  if (isAbsolute(witPath))
    return `witPath ${JSON.stringify(witPath)} is absolute: it must be a relative path inside the function`
  if (!within(real(dir), real(join(dir, witPath))))
    return `witPath ${JSON.stringify(witPath)} leaves the function's directory`
  return null
}

/** An esbuild plugin, first in the list: every other resolution passes through it. */
export function sourceGuard(dir: string, modules: string): Plugin {
  const roots = [real(dir), real(modules)]
  return {
    name: 'source-guard',
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if ((args.pluginData as { guarded?: boolean } | undefined)?.guarded === true) return undefined
        const result = await build.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          namespace: args.namespace,
          resolveDir: args.resolveDir,
          with: args.with,
          pluginData: { guarded: true },
        })
        if (result.errors.length > 0 || result.external || result.namespace !== 'file') return result
        if (!roots.some((root) => within(root, real(result.path)))) {
          return {
            errors: [
              {
                text: `imports ${JSON.stringify(args.path)}, which is outside the function's directory: a build sees only its own files and the builder's packages`,
              },
            ],
          }
        }
        return result
      })
    },
  }
}
