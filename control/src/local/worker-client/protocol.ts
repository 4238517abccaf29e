// The worker's protocol as the control plane speaks it: the types derived from its one
// definition (protocol-schema.ts) and the checks that hold a line the worker wrote to it. A
// reply of another shape is refused here, naming the field, rather than read as something else
// further on.
import type { XStatic } from 'typebox/schema'
import { Compile } from 'typebox/schema'
import { WorkerProtocolError } from './errors.js'
import { workerProtocol } from './protocol-schema.js'

type Defs = typeof workerProtocol.$defs
type Def<Name extends Extract<keyof Defs, string>> = XStatic<typeof workerProtocol & { $ref: `#/$defs/${Name}` }>

/** Per command (`op`), what is sent and what the worker answers when it succeeds. */
export type Ops = {
  load: { command: Def<'LoadCommand'>; reply: Def<'LoadReply'> }
  unload: { command: Def<'UnloadCommand'>; reply: Def<'UnloadReply'> }
  idle: { command: Def<'IdleCommand'>; reply: Def<'IdleReply'> }
  stats: { command: Def<'StatsCommand'>; reply: Def<'StatsReply'> }
  prune: { command: Def<'PruneCommand'>; reply: Def<'PruneReply'> }
}
export type Op = keyof Ops
/** A command as a caller writes it: the client numbers it. */
export type CommandOf<O extends Op> = Omit<Ops[O]['command'], 'id'>
export type ReplyOf<O extends Op> = Ops[O]['reply']
export type Failure = Def<'Failure'>
export type WorkerEvent = Def<'Event'>
/** One application's counters in `stats`. */
export type AppStats = Def<'AppStats'>
export type WorkerLimits = Def<'Limits'>

const check = <Name extends Extract<keyof Defs, string>>(name: Name) =>
  Compile({ ...workerProtocol, $ref: `#/$defs/${name}` })

const replies = {
  load: check('LoadReply'),
  unload: check('UnloadReply'),
  idle: check('IdleReply'),
  stats: check('StatsReply'),
  prune: check('PruneReply'),
}
const failure = check('Failure')
const event = check('Event')

/** What one stdout line is: a reply (success or failure, by its id) or an event. */
export type Line = { kind: 'reply'; id: number; reply: unknown } | { kind: 'event'; event: WorkerEvent }

/** Sorts a parsed stdout line; throws WorkerProtocolError when it is neither a reply nor a known event. */
export function classify(value: unknown): Line {
  if (typeof value === 'object' && value !== null && 'id' in value && typeof value.id === 'number')
    return { kind: 'reply', id: value.id, reply: value }
  if (event.Check(value)) return { kind: 'event', event: value }
  throw new WorkerProtocolError(
    `the worker wrote a line that is neither a reply nor an event: ${describe(event, value)}`,
  )
}

/** The reply to `op`, checked: the worker's failure as `{ok: false}`, anything else off the protocol throws. */
export function checkReply<O extends Op>(op: O, value: unknown): ReplyOf<O> | Failure {
  if (failure.Check(value)) return value
  const validator = replies[op]
  if (validator.Check(value)) return value
  throw new WorkerProtocolError(
    `the worker's reply to ${op} is not what the protocol says: ${describe(validator, value)}`,
  )
}

/** The first few errors, as `path: message`; the values themselves are left out (they may hold secrets). */
function describe(
  validator: { Errors: (value: unknown) => [boolean, { instancePath: string; message: string }[]] },
  value: unknown,
): string {
  const [, errors] = validator.Errors(value)
  const said = errors
    .filter((error) => error.message !== 'schema is false')
    .slice(0, 3)
    .map((error) => `${error.instancePath === '' ? '(the line)' : error.instancePath} ${error.message}`)
  return said.join('; ') || 'it does not match'
}
