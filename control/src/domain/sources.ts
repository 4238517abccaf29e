// Replacing a function's source, from a file map or an uploaded archive: every file checked
// against the limits before the one UPDATE, so a refused upload leaves the stored source as it was.
import type { Readable } from 'node:stream'
import { InvalidInputError } from '@session-relay/common/errors'
import type { SourceT } from '../model/resources.js'
import type { UnpackLimits } from '@session-relay/spin/source/archive'
import { unpackArchive } from '@session-relay/spin/source/archive'
import { checkFiles } from '@session-relay/spin/source/files'
import type { Database } from '../store/db.js'
import { getFunction } from '../store/functions.js'
import { replaceSource } from '../store/sources.js'
import { functionNotFound } from './not-found.js'

export async function replaceFiles(
  db: Database,
  appId: string,
  fnId: string,
  files: Record<string, string>,
  limits: UnpackLimits,
): Promise<SourceT> {
  checkFiles(files, limits)
  const source = await replaceSource(db, appId, fnId, files)
  if (source === null) throw functionNotFound()
  return source
}

/** The archive is read only for a function that exists. */
export async function replaceFromArchive(
  db: Database,
  appId: string,
  fnId: string,
  archive: () => Promise<Readable>,
  limits: UnpackLimits,
): Promise<SourceT> {
  if ((await getFunction(db, appId, fnId)) === null) throw functionNotFound()
  const files = await unpackArchive(await archive(), limits)
  // `tar` run in the wrong directory still writes an empty archive: storing it would
  // silently wipe the function's source.
  if (Object.keys(files).length === 0)
    throw new InvalidInputError(
      'the archive holds no files (was it made in the right directory?); the stored source is unchanged',
    )
  return replaceFiles(db, appId, fnId, files, limits)
}
