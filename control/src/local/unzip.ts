// Unpacks a zip as the Go module proxy serves one (a toolchain module: stored or deflated
// entries, no zip64, Unix modes in the external attributes). Node has no zip reader and the
// machine may have no `unzip`; the archive was checked against a pinned sha256 first, so this
// only has to refuse what would escape the target directory, not to survive hostile input.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join, normalize, sep } from 'node:path'
import { inflateRawSync } from 'node:zlib'

const END_OF_DIRECTORY = 0x06054b50
const DIRECTORY_ENTRY = 0x02014b50
const LOCAL_HEADER = 0x04034b50

/**
 * Writes every entry of `zip` whose name starts with `prefix` to `target`, without the prefix;
 * returns how many files it wrote. Throws on what it cannot read or a name leaving `target`.
 */
export function unzipTo(zip: Buffer, prefix: string, target: string): number {
  const end = findEndOfDirectory(zip)
  const count = zip.readUInt16LE(end + 10)
  let at = zip.readUInt32LE(end + 16)
  let written = 0
  const made = new Set<string>()
  for (let index = 0; index < count; index++) {
    if (zip.readUInt32LE(at) !== DIRECTORY_ENTRY) throw new Error('not a zip: a broken central directory')
    const method = zip.readUInt16LE(at + 10)
    const compressedSize = zip.readUInt32LE(at + 20)
    const nameLength = zip.readUInt16LE(at + 28)
    const extraLength = zip.readUInt16LE(at + 30)
    const commentLength = zip.readUInt16LE(at + 32)
    const mode = zip.readUInt32LE(at + 38) >>> 16
    const localAt = zip.readUInt32LE(at + 42)
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength)
    at += 46 + nameLength + extraLength + commentLength
    if (!name.startsWith(prefix) || name.endsWith('/')) continue
    const relative = normalize(name.slice(prefix.length))
    if (relative === '' || relative.startsWith('..') || relative.startsWith(sep))
      throw new Error(`zip entry ${name} leaves the target directory`)
    if (zip.readUInt32LE(localAt) !== LOCAL_HEADER) throw new Error(`zip entry ${name}: no local header`)
    const dataAt = localAt + 30 + zip.readUInt16LE(localAt + 26) + zip.readUInt16LE(localAt + 28)
    const data = zip.subarray(dataAt, dataAt + compressedSize)
    let content: Buffer
    if (method === 0) content = data
    else if (method === 8) content = inflateRawSync(data)
    else throw new Error(`zip entry ${name}: compression method ${method} is not read here`)
    const path = join(target, relative)
    for (let dir = dirname(path); !made.has(dir) && dir.startsWith(target); dir = dirname(dir)) made.add(dir)
    mkdirSync(dirname(path), { recursive: true })
    // Executables keep their x bits (go, gofmt, the tools under pkg/tool); the rest is 0644.
    // Set after writing: the control plane's umask (077) would leave them to root alone, and
    // the build's steps run as uid 65534.
    writeFileSync(path, content)
    chmodSync(path, (mode & 0o111) !== 0 ? 0o755 : 0o644)
    written++
  }
  for (const dir of made) chmodSync(dir, 0o755)
  return written
}

function findEndOfDirectory(zip: Buffer): number {
  // The record is 22 bytes plus a comment of at most 64 KiB, at the very end.
  for (let at = zip.length - 22; at >= Math.max(0, zip.length - 22 - 0xffff); at--) {
    if (zip.readUInt32LE(at) === END_OF_DIRECTORY) return at
  }
  throw new Error('not a zip: no end of central directory')
}
