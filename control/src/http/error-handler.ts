// The one error handler of the app: every failure becomes `{"error": reason}`.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { HttpError } from '@session-relay/common/errors'

/** Largest JSON body a route takes unless it sets its own limit. */
export const JSON_BODY_LIMIT = 1024 * 1024

// Fastify's own refusals get a plainer wording; the rest of its 4xx messages are fine as they are.
const FASTIFY_MESSAGES: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'body is not valid JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'body is empty; expected JSON',
}

/**
 * The one error handler: every failure becomes `{"error": reason}`. HttpErrors and Fastify's
 * 4xx carry a reason written for the caller; anything else is a bug or a broken dependency,
 * so the caller gets only "internal error" and the log gets the error with the request id.
 */
export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (error instanceof HttpError) {
    reply.code(error.status).headers(error.headers).send({ error: error.message })
    return
  }
  const status = error.statusCode ?? 500
  if (status >= 400 && status < 500) {
    if (status === 415) {
      reply
        .code(415)
        .send({ error: `unsupported content type ${JSON.stringify(request.headers['content-type'] ?? '')}` })
      return
    }
    // A route may set its own body limit (invoke does, for base64): name the one that tripped.
    const message =
      error.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
        ? `request body too large: at most ${request.routeOptions.bodyLimit ?? JSON_BODY_LIMIT} bytes`
        : (FASTIFY_MESSAGES[error.code] ?? error.message)
    reply.code(status).send({ error: message })
    return
  }
  request.log.error({ err: error }, 'internal error')
  reply.code(500).send({ error: 'internal error' })
}
