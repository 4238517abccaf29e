// Paths that a build's toolchains read as their own configuration rather than as the function's
// code. A tenant who can write them steers the tools: a `.git/config` with a hook made `go build`
// run a shell as the control plane's user (Go stamps version-control information through git),
// a `.cargo/config.toml` names the `rustc` cargo runs while it fetches, a `node_modules/` package
// shadows the builder's own and points the WIT parser at a host file. The source API refuses
// them (400 naming the path) and the builder skips any that a source stored earlier still holds.
// The paths are relative to the function's directory.

// Read wherever they are: version control (Go looks for each upward from the package to stamp
// it), cargo's configuration directory (read in every ancestor of the working directory) and
// node's package directory (resolved upward from every importer).
const ANY_DEPTH = new Set(['.git', '.hg', '.svn', '.bzr', '.fossil', '_FOSSIL_', '_darcs', '.cargo', 'node_modules'])

// Read at the function's root: cargo's output directory, the toolchain pins rustup and Go honour,
// Go's workspace files (they replace the module's own requirements).
const AT_ROOT = new Set([
  'target',
  'rust-toolchain',
  'rust-toolchain.toml',
  'go.work',
  'go.work.sum',
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
])

/** Why a function may not hold `path` (relative to its directory), or null when it may. */
export function toolchainPathProblem(path: string): string | null {
  const parts = path.split('/')
  const first = parts[0] as string
  if (AT_ROOT.has(first)) return `${JSON.stringify(first)} is read by the build's toolchain as its configuration`
  const found = parts.find((part) => ANY_DEPTH.has(part))
  if (found !== undefined)
    return `${JSON.stringify(found)} is read by the build's toolchain as its configuration, at any depth`
  return null
}

/** Every name refused, for documentation and tests. */
export const TOOLCHAIN_PATHS = { anyDepth: [...ANY_DEPTH], atRoot: [...AT_ROOT] }
