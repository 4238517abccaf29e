// The 404s several resources' routes answer with the same words, written once.
import { NotFoundError } from '../errors.js'

export function applicationNotFound (): NotFoundError {
  return new NotFoundError('application not found')
}

export function functionNotFound (): NotFoundError {
  return new NotFoundError('function not found')
}

export function buildNotFound (): NotFoundError {
  return new NotFoundError('build not found')
}
