// A local directory as the file map the API stores, checked the way the server checks it
// (spin/src/source/files.ts) so a refusal comes before any upload and names the file.
import { readdir, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Language } from './api/types.js'
import { WasmkubeError } from './errors.js'

export const LANGUAGES: readonly Language[] = ['js', 'ts', 'go', 'rust']

const MAX_FILES = 1000
/** The server's default --max-archive-bytes; one set lower refuses with its own reason. */
const MAX_BYTES = 8 * 1024 * 1024
const MAX_PATH_LENGTH = 256
const ALWAYS_SKIPPED = ['.git', 'node_modules', 'target', 'dist', '.wasmkubeignore']

/** Every file under `dir` that is not skipped, path (with "/") to text. */
export async function readSource(dir: string): Promise<Record<string, string>> {
  const info = await stat(dir).catch(() => null)
  if (info === null || !info.isDirectory()) throw new WasmkubeError('local', `${dir} is not a directory`)
  const skip = await ignoreRules(dir)
  const files: Record<string, string> = {}
  let total = 0
  const walk = async (relative: string): Promise<void> => {
    const entries = await readdir(join(dir, relative), { withFileTypes: true })
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const path = relative === '' ? entry.name : `${relative}/${entry.name}`
      if (skip(entry.name, path)) continue
      if (entry.isDirectory()) {
        await walk(path)
        continue
      }
      if (!entry.isFile())
        throw refuse(path, 'not a regular file (a link or device): the server takes regular files only')
      if (path.length > MAX_PATH_LENGTH) throw refuse(path, `the path is longer than ${MAX_PATH_LENGTH} characters`)
      const bytes = await readFile(join(dir, path))
      total += bytes.byteLength
      if (Object.keys(files).length >= MAX_FILES)
        throw new WasmkubeError(
          'local',
          `${dir}: more than ${MAX_FILES} files (the server's limit); add the ones not needed to .wasmkubeignore`,
        )
      if (total > MAX_BYTES)
        throw new WasmkubeError(
          'local',
          `${dir}: the files hold more than ${MAX_BYTES} bytes (the server's limit); add the ones not needed to .wasmkubeignore`,
        )
      const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
      let content: string
      try {
        content = text.decode(bytes)
      } catch {
        throw refuse(
          path,
          'not UTF-8 text: the server stores source as text (add it to .wasmkubeignore if the build does not need it)',
        )
      }
      if (content.includes('\u0000')) throw refuse(path, 'contains a NUL character: the server stores source as text')
      files[path] = content
    }
  }
  await walk('')
  if (Object.keys(files).length === 0) throw new WasmkubeError('local', `${dir} holds no files to upload`)
  return files
}

const refuse = (path: string, why: string) => new WasmkubeError('local', `${path}: ${why}`)

/** The language the files are written in, from the files a build of each needs. */
export function languageOf(files: Record<string, string>): Language | undefined {
  if ('go.mod' in files) return 'go'
  if ('Cargo.toml' in files) return 'rust'
  if ('tsconfig.json' in files) return 'ts'
  if ('package.json' in files) return 'js'
  return undefined
}

// .gitignore and .wasmkubeignore lines: a name or a path, with * for any characters but "/";
// a trailing "/" is dropped; "#" comments and "!" negations are ignored (not supported).
async function ignoreRules(dir: string): Promise<(name: string, path: string) => boolean> {
  const patterns: RegExp[] = []
  for (const file of ['.gitignore', '.wasmkubeignore']) {
    const text = await readFile(join(dir, file), 'utf8').catch(() => '')
    for (const raw of text.split('\n')) {
      const line = raw.trim().replace(/\/+$/, '')
      if (line === '' || line.startsWith('#') || line.startsWith('!')) continue
      const anchored = line.startsWith('/') || line.includes('/')
      const body = line
        .replace(/^\/+/, '')
        .split('*')
        .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/]*')
      patterns.push(new RegExp(anchored ? `^${body}$` : `(^|/)${body}$`))
    }
  }
  return (name, path) => ALWAYS_SKIPPED.includes(name) || patterns.some((pattern) => pattern.test(path))
}
