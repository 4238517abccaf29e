/** A build that failed for a reason its user can act on: the message is the termination log's short reason. */
export class BuildFailure extends Error {}
