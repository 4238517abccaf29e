// Errors as classes with a stable `code`. A WasmkubeError ends the command with exit 1 (the
// server refused, a build failed, the network); a UsageError with exit 2 (misuse).

export type WasmkubeErrorCode =
  | 'refused' // the server answered with an error status; `status` and its reason are set
  | 'bad_answer' // the server's answer was too large or not what the API documents
  | 'network' // no answer at all
  | 'build_failed'
  | 'not_found' // no application of that name
  | 'not_logged_in'
  | 'login_failed'
  | 'local' // a local file or directory problem (unreadable, refused before upload)

export class WasmkubeError extends Error {
  readonly code: WasmkubeErrorCode
  readonly status: number | undefined

  constructor(code: WasmkubeErrorCode, message: string, opts: { status?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.name = 'WasmkubeError'
    this.code = code
    this.status = opts.status
  }
}

export class UsageError extends Error {
  readonly code = 'usage'
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}
