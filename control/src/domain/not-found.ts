// The 404s several resources answer with the same words, written once: thrown by the routes
// and by the domain modules below them.
import { NotFoundError } from '@session-relay/common/errors'

export function applicationNotFound(): NotFoundError {
  return new NotFoundError('application not found')
}

export function functionNotFound(): NotFoundError {
  return new NotFoundError('function not found')
}

export function buildNotFound(): NotFoundError {
  return new NotFoundError('build not found')
}
