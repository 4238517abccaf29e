// A function's source: read and replace it as a file map or as a .tar.gz (uploaded as
// multipart or as the whole body). The checks are in domain/sources.ts.
import type { Readable } from 'node:stream'
import multipart from '@fastify/multipart'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { functionNotFound } from '../../domain/not-found.js'
import { replaceFiles, replaceFromArchive } from '../../domain/sources.js'
import { HttpError, InvalidInputError } from '@session-relay/common/errors'
import { Source } from '../../model/resources.js'
import { packArchive, UploadBrokeOffError } from '@session-relay/spin/source/archive'
import { MAX_FILES } from '@session-relay/spin/source/files'
import { getFunction } from '../../store/functions.js'
import { getSource } from '../../store/sources.js'
import type { RouteDeps } from '../route-deps.js'
import { errors } from '../schemas/errors.js'
import { FunctionParams } from '../schemas/params.js'
import { PutSource } from '../schemas/sources.js'

const GZIP_TYPES = ['application/gzip', 'application/x-gzip']
const ARCHIVE_FIELD = 'archive'

export const sourceRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, { db, config }) => {
  const limits = { maxFiles: MAX_FILES, maxBytes: config.maxArchiveBytes, maxArchiveBytes: config.maxArchiveBytes }

  // Uploads are read as streams by the handler, which counts and limits them itself: the
  // multipart file may run one byte past the limit, only so that the handler sees it did.
  await app.register(multipart, {
    limits: { fileSize: config.maxArchiveBytes + 1, files: 1, fields: 10, parts: 11 },
    throwFileSizeLimit: false,
  })
  app.addContentTypeParser(GZIP_TYPES, (_request, payload, done) => done(null, payload))

  app.get(
    '/applications/:appId/functions/:fnId/source',
    {
      schema: {
        tags: ['source'],
        operationId: 'getSource',
        summary: "A function's files",
        params: FunctionParams,
        response: { 200: Source, ...errors(404) },
      },
    },
    async (request) => {
      const source = await getSource(db, request.params.appId, request.params.fnId)
      if (source === null) throw functionNotFound()
      return source
    },
  )

  app.put(
    '/applications/:appId/functions/:fnId/source',
    {
      schema: {
        tags: ['source'],
        operationId: 'replaceSource',
        summary: "Replace a function's whole file map at once (to add a file, send the merged set)",
        params: FunctionParams,
        body: PutSource,
        response: { 200: Source, ...errors(400, 404, 413, 415) },
      },
    },
    async (request) => replaceFiles(db, request.params.appId, request.params.fnId, request.body.files, limits),
  )

  app.get(
    '/applications/:appId/functions/:fnId/source.tar.gz',
    {
      schema: {
        tags: ['source'],
        operationId: 'downloadSourceArchive',
        summary: "A function's files as a gzipped tar",
        params: FunctionParams,
        response: {
          200: {
            content: {
              'application/gzip': { schema: Type.Unsafe<Buffer>({ type: 'string', contentEncoding: 'binary' }) },
            },
          },
          ...errors(404),
        },
      },
    },
    async (request, reply) => {
      const { appId, fnId } = request.params
      const [fn, source] = await Promise.all([getFunction(db, appId, fnId), getSource(db, appId, fnId)])
      if (fn === null || source === null) throw functionNotFound()
      const archive = await packArchive(source.files, new Date(source.updatedAt))
      return (
        reply
          .type('application/gzip')
          // Function names are DNS labels: nothing in them needs quoting.
          .header('content-disposition', `attachment; filename="${fn.name}.tar.gz"`)
          .send(archive)
      )
    },
  )

  app.post(
    '/applications/:appId/functions/:fnId/source.tar.gz',
    {
      schema: {
        tags: ['source'],
        operationId: 'uploadSourceArchive',
        summary: "Replace a function's files with the contents of a gzipped tar",
        description: `Only regular files and directories; at most ${MAX_FILES} files and ${config.maxArchiveBytes} bytes, compressed and unpacked. A refused archive leaves the stored source as it was.`,
        params: FunctionParams,
        body: {
          content: {
            'multipart/form-data': {
              schema: Type.Object(
                { [ARCHIVE_FIELD]: Type.String({ contentEncoding: 'binary', description: 'the .tar.gz' }) },
                { required: [ARCHIVE_FIELD] },
              ),
            },
            'application/gzip': {
              schema: Type.String({ contentEncoding: 'binary', description: 'the .tar.gz as the whole body' }),
            },
          },
        },
        response: { 200: Source, ...errors(400, 404, 413, 415) },
      },
    },
    async (request, reply) => {
      const { appId, fnId } = request.params
      try {
        return await replaceFromArchive(db, appId, fnId, () => archiveStream(request), limits)
      } catch (error) {
        // The rest of a refused upload is never read: end the connection after the answer
        // instead of draining what could be gigabytes.
        if (error instanceof HttpError) reply.header('connection', 'close')
        // Usually a client that hung up: nobody reads the answer, and nothing is wrong here.
        if (error instanceof UploadBrokeOffError) request.log.debug({ reason: error.message }, 'upload broke off')
        throw error
      }
    },
  )
}

type UploadRequest = {
  body: unknown
  isMultipart(): boolean
  file(): Promise<{ fieldname: string; file: Readable } | undefined>
}

/** The uploaded archive's bytes, whichever way they came. */
async function archiveStream(request: UploadRequest): Promise<Readable> {
  if (request.isMultipart()) {
    let part
    try {
      part = await request.file()
    } catch (error) {
      // The plugin's own refusals (limits, content type) carry their status; anything else
      // is the form parser failing on what the client sent.
      if (typeof (error as { statusCode?: unknown }).statusCode === 'number') throw error
      throw new InvalidInputError(`malformed multipart body: ${(error as Error).message}`)
    }
    if (part === undefined || part.fieldname !== ARCHIVE_FIELD) {
      throw new InvalidInputError(`expected the archive in the multipart file field "${ARCHIVE_FIELD}"`)
    }
    return part.file
  }
  const body = request.body as Readable | undefined
  if (body === undefined || typeof body.pipe !== 'function') {
    throw new HttpError(
      415,
      `send the archive as multipart/form-data (file field "${ARCHIVE_FIELD}") or as an application/gzip body`,
    )
  }
  return body
}
