// The rules every stored source obeys, whichever way it arrived (JSON or archive): file paths
// that can be written below a build directory and nowhere else, text contents PostgreSQL can
// store, and a cap on the number of files and their total size.
import { InvalidInputError, TooLargeError } from '@session-relay/common/errors'
import { toolchainPathProblem } from './toolchain-paths.js'

export const MAX_FILES = 1000
const MAX_PATH_LENGTH = 256

export type SourceLimits = {
  maxFiles: number
  /** Total bytes of all contents, UTF-8 encoded. */
  maxBytes: number
}

// C0 and C1 controls, DEL and the Unicode line and paragraph separators: no legitimate file
// name has them, and they break terminals, logs and tools.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/
// With the u flag a paired surrogate is one code point, so this matches only lone halves,
// which have no UTF-8 encoding.
const LONE_SURROGATE = /\p{Cs}/u

/** Why `path` is not an acceptable file path, or null when it is. */
export function pathProblem(path: string): string | null {
  if (path === '') return 'the path is empty'
  if (path.length > MAX_PATH_LENGTH) return `the path is longer than ${MAX_PATH_LENGTH} characters`
  if (path.startsWith('/')) return 'the path is absolute'
  if (path.includes('\\')) return 'the path contains "\\"'
  if (CONTROL.test(path)) return 'the path contains a control character'
  if (LONE_SURROGATE.test(path)) return 'the path is not valid Unicode'
  for (const part of path.split('/')) {
    if (part === '') return 'the path has an empty part ("//" or a trailing "/")'
    if (part === '.' || part === '..') return `the path contains "${part}"`
  }
  return null
}

// Keys that a plain JavaScript object does not hold as ordinary data: JSON.parse makes
// "__proto__" an own key, an assignment sets the prototype instead, and Fastify's JSON parser
// refuses it, so such a file would come back different (or not at all) depending on the way
// it travelled. None of them is a file name a build needs.
const RESERVED_PATHS = new Set(['__proto__', 'constructor', 'prototype'])

/** Why the set of paths cannot be unpacked as files in one directory, or null when it can. */
function pathSetProblem(paths: string[]): string | null {
  const files = new Set(paths)
  for (const path of paths) {
    if (RESERVED_PATHS.has(path)) return `invalid file path ${JSON.stringify(path)}: a name JavaScript objects reserve`
    // "a" and "a/b" cannot both be written: "a" would have to be a file and a directory.
    for (let slash = path.indexOf('/'); slash !== -1; slash = path.indexOf('/', slash + 1)) {
      const parent = path.slice(0, slash)
      if (files.has(parent))
        return `invalid file path ${JSON.stringify(path)}: ${JSON.stringify(parent)} is a file, so it cannot be a directory too`
    }
  }
  return null
}

/** Why `content` cannot be stored as a file's text, or null when it can. */
export function contentProblem(content: string): string | null {
  // PostgreSQL text and jsonb cannot hold NUL.
  if (content.includes('\u0000')) return 'the content contains a NUL character'
  if (LONE_SURROGATE.test(content)) return 'the content is not valid Unicode'
  return null
}

/** Throws a 400 or 413 HttpError unless `files` is an acceptable source. */
export function checkFiles(files: Record<string, string>, limits: SourceLimits): void {
  const paths = Object.keys(files)
  if (paths.length > limits.maxFiles) throw new TooLargeError(`too many files: at most ${limits.maxFiles}`)
  let total = 0
  for (const path of paths) {
    const problem = pathProblem(path) ?? toolchainPathProblem(path)
    if (problem !== null) throw new InvalidInputError(`invalid file path ${JSON.stringify(path)}: ${problem}`)
    const content = files[path] as string
    const contentIssue = contentProblem(content)
    if (contentIssue !== null) throw new InvalidInputError(`invalid file ${JSON.stringify(path)}: ${contentIssue}`)
    total += Buffer.byteLength(content, 'utf8')
  }
  const setProblem = pathSetProblem(paths)
  if (setProblem !== null) throw new InvalidInputError(setProblem)
  if (total > limits.maxBytes)
    throw new TooLargeError(`source too large: the files hold more than ${limits.maxBytes} bytes`)
}

/** The same files with their paths in a stable, readable order. */
export function sortedFiles(files: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.keys(files)
      .sort()
      .map((path) => [path, files[path] as string]),
  )
}
