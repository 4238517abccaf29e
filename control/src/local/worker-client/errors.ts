import { UnavailableError } from '@session-relay/common/errors'

/** A worker that is down, or could not be started: the spec's 503 "worker unreachable". */
export class WorkerUnreachableError extends UnavailableError {}

/** The worker wrote something the protocol (protocol-schema.ts) does not allow: a worker of another version, or a bug on one side. */
export class WorkerProtocolError extends UnavailableError {
  override readonly code: string = 'ERR_WORKER_PROTOCOL'
}

/** The worker answered `{ok: false}`: its `error`, as it wrote it. */
export class WorkerCommandError extends Error {
  readonly code: string = 'ERR_WORKER_COMMAND'
  constructor(message: string) {
    super(message)
    this.name = new.target.name
  }
}
