// Source archives: a file map packed into a gzipped tar, and an uploaded gzipped tar unpacked
// into a file map. Uploads are untrusted, so unpacking streams and counts as it goes: it stops
// reading and inflating the moment a limit is passed, and never holds more than the limits
// allow. Only regular files and directories are accepted; links, devices and paths that could
// leave the source directory are refused.
import type { Readable } from 'node:stream'
import { Transform } from 'node:stream'
import type { TransformCallback } from 'node:stream'
import { createGunzip, createGzip } from 'node:zlib'
import type { ZlibOptions } from 'node:zlib'
import tar from 'tar-stream'
import type { HttpError } from '@session-relay/common/errors'
import { InvalidInputError, TooLargeError } from '@session-relay/common/errors'
import { contentProblem, pathProblem } from './files.js'
import type { SourceLimits } from './files.js'

/** The upload stream failed or closed early: the client hung up or sent a broken body. */
export class UploadBrokeOffError extends InvalidInputError {}

/** Pack files (path to text) into a .tar.gz: regular files, mode 0644, in path order. */
export async function packArchive(files: Record<string, string>, mtime: Date): Promise<Buffer> {
  const pack = tar.pack()
  const gzip = createGzip()
  const chunks: Buffer[] = []
  const done = new Promise<void>((resolve, reject) => {
    gzip.on('data', (chunk: Buffer) => chunks.push(chunk))
    gzip.on('end', resolve)
    gzip.on('error', reject)
    pack.on('error', reject)
  })
  pack.pipe(gzip)
  for (const path of Object.keys(files).sort()) {
    pack.entry({ name: path, mode: 0o644, mtime, type: 'file' }, Buffer.from(files[path] as string, 'utf8'))
  }
  pack.finalize()
  await done
  return Buffer.concat(chunks)
}

export type UnpackLimits = SourceLimits & {
  /** Largest accepted upload: the compressed bytes. */
  maxArchiveBytes: number
}

// Tar spends 512 bytes of header per entry and pads contents to 512; a path up to the length
// limit may add a pax record of another 1 KiB. Past contents plus this, the stream is padding
// or a header bomb (a pax header of gigabytes is buffered whole by tar-stream).
const OVERHEAD_PER_ENTRY = 2048
const END_OF_ARCHIVE = 10_240

/**
 * Read a .tar.gz from `input` into a file map. Rejects with a 413 HttpError past a limit, a 400
 * for anything else unacceptable. On a refusal `input` is left paused and unread, not
 * destroyed, so the caller can still answer on the same connection (and should close it).
 */
// What each stage buffers. Node 22 raised the streams' default to 64 KiB, and with
// that the pipeline read most of a gzip bomb's first 256 KiB before the inflated count tripped.
const STAGE_BUFFER = 16 * 1024

export function unpackArchive(input: Readable, limits: UnpackLimits): Promise<Record<string, string>> {
  const maxEntries = 2 * limits.maxFiles // files plus as many directories
  const inflatedLimit = limits.maxBytes + maxEntries * OVERHEAD_PER_ENTRY + END_OF_ARCHIVE
  const files = new Map<string, string>()
  let contentBytes = 0
  let entries = 0

  const compressed = countBytes(
    limits.maxArchiveBytes,
    () => new TooLargeError(`archive too large: more than ${limits.maxArchiveBytes} bytes`),
  )
  // zlib passes stream options through to its Transform; its typings leave them out.
  const gunzip = createGunzip({ highWaterMark: STAGE_BUFFER } as ZlibOptions)
  const inflated = countBytes(
    inflatedLimit,
    () => new TooLargeError(`archive unpacks to more than ${limits.maxBytes} bytes`),
  )
  const extract = tar.extract()

  return new Promise((resolve, reject) => {
    let settled = false
    const fail = (error: Error): void => {
      if (settled) return
      settled = true
      input.unpipe(compressed)
      input.pause()
      for (const stream of [compressed, gunzip, inflated, extract]) stream.destroy()
      reject(error)
    }

    extract.on('entry', (header, stream, next) => {
      const refusal = checkEntry(header)
      if (refusal !== null) return fail(refusal)
      if (++entries > maxEntries) return fail(new TooLargeError(`too many files: at most ${limits.maxFiles}`))
      if (header.type === 'directory') {
        stream.resume()
        return stream.on('end', next)
      }
      const path = normalise(header.name)
      if (!files.has(path) && files.size >= limits.maxFiles)
        return fail(new TooLargeError(`too many files: at most ${limits.maxFiles}`))
      const chunks: Buffer[] = []
      stream.on('data', (data: unknown) => {
        const chunk = data as Buffer
        contentBytes += chunk.length
        if (contentBytes > limits.maxBytes)
          return fail(new TooLargeError(`archive unpacks to more than ${limits.maxBytes} bytes`))
        chunks.push(chunk)
      })
      stream.on('end', () => {
        if (settled) return
        const content = decodeUtf8(Buffer.concat(chunks))
        const problem = content === null ? 'the content is not UTF-8 text' : contentProblem(content)
        if (problem !== null)
          return fail(new InvalidInputError(`invalid file ${JSON.stringify(path)} in the archive: ${problem}`))
        files.set(path, content as string)
        next()
      })
    })
    extract.on('finish', () => {
      if (settled) return
      settled = true
      resolve(withoutTopFolder(Object.fromEntries(files)))
    })

    extract.on('error', (error: Error) => fail(new InvalidInputError(`not a valid tar archive: ${error.message}`)))
    gunzip.on('error', (error: Error) => fail(new InvalidInputError(`not a valid gzip file: ${error.message}`)))
    for (const stream of [compressed, inflated]) stream.on('error', fail)
    // The upload itself breaking (a client that hangs up, a multipart body that ends inside
    // the part) is the client's doing: a 400, not an internal error. A stream that closes
    // without ending, or was gone before this started, would otherwise leave the promise
    // (and the request) pending forever.
    const brokeOff = (reason: string): void => fail(new UploadBrokeOffError(`the upload broke off: ${reason}`))
    input.on('error', (error: Error) => brokeOff(error.message))
    input.on('close', () => {
      if (!input.readableEnded) brokeOff('the stream closed before its end')
    })
    if (input.destroyed) return brokeOff('the stream closed before its end')

    input.pipe(compressed).pipe(gunzip).pipe(inflated).pipe(extract)
  })
}

// A build reads its manifest at the function's root.
const MANIFESTS = ['package.json', 'go.mod', 'Cargo.toml']

/**
 * An archive made of a project's folder (`tar -czf x.tgz -C build hello`, `git archive
 * --prefix=hello/`) holds every file under one folder, and the build would find no manifest at
 * the root: such a folder is dropped from the paths when a manifest is directly in it, and the
 * files are kept as they are otherwise (a folder of sources alone is a layout the user chose).
 */
function withoutTopFolder(files: Record<string, string>): Record<string, string> {
  const paths = Object.keys(files)
  const top = paths[0]?.split('/')[0]
  if (top === undefined || !paths.every((path) => path.startsWith(`${top}/`))) return files
  if (!MANIFESTS.some((name) => `${top}/${name}` in files)) return files
  return Object.fromEntries(paths.map((path) => [path.slice(top.length + 1), files[path] as string]))
}

type TarHeader = tar.Header

/** Why the archive is refused at this entry, before its content is read; null when it may pass. */
function checkEntry(header: TarHeader): HttpError | null {
  const type = header.type ?? 'file'
  const shown = JSON.stringify(header.name)
  if (type === 'symlink' || type === 'link')
    return new InvalidInputError(`archive entry ${shown} is a link: only regular files and directories are allowed`)
  if (type !== 'file' && type !== 'directory')
    return new InvalidInputError(`archive entry ${shown} is a ${type}: only regular files and directories are allowed`)
  const path = normalise(header.name)
  // The archive's root itself ("./" as `tar -C dir .` writes it) is the only empty path allowed.
  if (type === 'directory' && path === '') return null
  const problem = pathProblem(path)
  if (problem !== null) return new InvalidInputError(`invalid path ${shown} in the archive: ${problem}`)
  return null
}

// `tar -C dir .` prefixes every name with "./", and directories end in "/": neither is part of the path.
function normalise(name: string): string {
  let path = name
  while (path.startsWith('./')) path = path.slice(2)
  if (path === '.') return ''
  return path.endsWith('/') ? path.slice(0, -1) : path
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

function decodeUtf8(bytes: Buffer): string | null {
  try {
    return utf8.decode(bytes)
  } catch {
    return null
  }
}

/** A pass-through that fails with `tooLarge()` as soon as more than `limit` bytes went through. */
function countBytes(limit: number, tooLarge: () => Error): Transform {
  let seen = 0
  return new Transform({
    highWaterMark: STAGE_BUFFER,
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      seen += chunk.length
      if (seen > limit) return callback(tooLarge())
      callback(null, chunk)
    },
  })
}
