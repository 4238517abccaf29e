// Which of the unpacked archive's files a build writes to disk: spin.toml and each function's
// own files, never a path its toolchain would read as configuration. The source API refuses those
// (spin/src/source/toolchain-paths.ts), but a source stored before it did may still hold one, and
// a build Job's archive is only as good as whoever wrote its Secret.
import { toolchainPathProblem } from '@session-relay/spin/source/toolchain-paths'

const FUNCTION_FILE = /^functions\/[^/]+\/(.+)$/

/** The files a build may write, and a line for each one it leaves out. */
export function buildableFiles(files: Record<string, string>): { kept: Record<string, string>; ignored: string[] } {
  const kept: Record<string, string> = {}
  const ignored: string[] = []
  for (const [path, content] of Object.entries(files)) {
    if (path === 'spin.toml') {
      kept[path] = content
      continue
    }
    const inFunction = FUNCTION_FILE.exec(path)?.[1]
    const problem = inFunction === undefined ? 'outside every function directory' : toolchainPathProblem(inFunction)
    if (problem === null) kept[path] = content
    else ignored.push(`ignored ${path}: ${problem}`)
  }
  return { kept, ignored }
}
