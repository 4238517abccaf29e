// How a builder's end becomes a build's outcome, the same whichever runtime ran it: the
// builder's last word (Kubernetes' termination message, or the file a local build writes)
// names the pushed image or the reason it failed.
import type { BuildOutcome } from '../store/builds.js'

/** The most of a build's log the database keeps: the end, where the errors are. */
export const MAX_STORED_LOG_BYTES = 1024 * 1024
const MAX_ERROR_LENGTH = 4000

/** A reference with a repository and a tag or digest; anything else the builder said is not one. */
const IMAGE_REF = /^[^\s]+[/:][^\s]+$/

/** Succeeded: the builder names what it pushed, pinned by digest; else the reference it was given. */
export function succeeded(lastWord: string, planned: string, log: string | null): BuildOutcome {
  return { status: 'succeeded', imageRef: IMAGE_REF.test(lastWord) ? lastWord : planned, log }
}

/** Failed with `reason`, its end kept when it is long (compilers put the error last). */
export function failed(reason: string, log: string | null): BuildOutcome {
  return {
    status: 'failed',
    error: reason.length > MAX_ERROR_LENGTH ? '…' + reason.slice(-MAX_ERROR_LENGTH) : reason,
    log,
  }
}
