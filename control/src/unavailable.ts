// Dependencies this version has no client for yet. The endpoints that need them exist, with
// their full request schemas, check what they can (ids, parameters) and then answer 503, so
// adding the cluster client changes handlers, not the API.
import { UnavailableError } from './errors.js'

export function clusterUnavailable (): UnavailableError {
  return new UnavailableError('cluster not configured')
}
