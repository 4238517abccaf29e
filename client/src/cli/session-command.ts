// relay session create|list|get|delete, and relay pair.
import type { CreatedSession, Session } from '../types.js'
import { parseCommand } from './args.js'
import type { Io } from './context.js'
import { adminFor, serverOf } from './context.js'
import { relayLauncher } from './launcher.js'
import { HELP, UsageError } from './usage.js'

export async function sessionCommand(args: string[], io: Io): Promise<number> {
  const help = HELP.session as string
  const { values, positionals } = parse(
    args,
    {
      json: { type: 'boolean' },
      limit: { type: 'string' },
      'max-bytes': { type: 'string' },
      'bytes-per-second': { type: 'string' },
      'ttl-seconds': { type: 'string' },
    },
    help,
  )
  const [verb, id, ...extra] = positionals
  if (extra.length > 0) throw new UsageError(`unexpected argument: ${extra[0]}`, help)
  const needsId = verb === 'get' || verb === 'delete'
  if (needsId && id === undefined) throw new UsageError(`relay session ${verb} needs a session id`, help)
  if (!needsId && id !== undefined) throw new UsageError(`unexpected argument: ${id}`, help)
  // Checked before the relay is asked anything: a usage error is 2 whether or not it answers.
  const limit = values.limit === undefined ? undefined : Number(values.limit)
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1))
    throw new UsageError('--limit: a positive integer', help)
  const limits = {
    ...positiveFlag(values['max-bytes'], '--max-bytes', 'max_bytes', help),
    ...positiveFlag(values['bytes-per-second'], '--bytes-per-second', 'bytes_per_second', help),
    ...positiveFlag(values['ttl-seconds'], '--ttl-seconds', 'ttl_seconds', help),
  }
  if (verb !== 'create' && Object.keys(limits).length > 0)
    throw new UsageError('--max-bytes, --bytes-per-second and --ttl-seconds are for relay session create', help)
  const server = serverOf(values.server as string | undefined, io, help)
  const json = values.json === true
  const print = (value: unknown) => io.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
  switch (verb) {
    case 'create': {
      const created = await (
        await adminFor(server, io)
      ).createSession(Object.keys(limits).length > 0 ? limits : undefined)
      if (json) print(created)
      else io.stdout.write(table([createdRow(created)], ['id', 'initiator_token', 'responder_token', 'expires_at']))
      return 0
    }
    case 'list': {
      const admin = await adminFor(server, io)
      let sessions: Session[] = []
      if (limit !== undefined) {
        const page = await admin.listSessions({ limit })
        if (json) {
          print(page)
          return 0
        }
        sessions = page.sessions
      } else {
        for await (const session of admin.allSessions()) sessions.push(session)
        if (json) {
          print({ sessions })
          return 0
        }
      }
      io.stdout.write(table(sessions.map(sessionRow), SESSION_COLUMNS))
      return 0
    }
    case 'get': {
      const session = await (await adminFor(server, io)).getSession(id as string)
      if (json) print(session)
      else io.stdout.write(table([sessionRow(session)], SESSION_COLUMNS))
      return 0
    }
    case 'delete':
      await (await adminFor(server, io)).deleteSession(id as string)
      if (json) print({ deleted: id })
      else io.stderr.write(`deleted ${id}\n`)
      return 0
    default:
      throw new UsageError(
        verb === undefined ? 'relay session needs create, list, get or delete' : `unknown session command: ${verb}`,
        help,
      )
  }
}

/** `{ [field]: n }` for a flag given as a positive integer, `{}` when not given. */
function positiveFlag(text: unknown, flag: string, field: string, help: string): Record<string, number> {
  if (text === undefined) return {}
  const value = Number(text)
  if (typeof text !== 'string' || !/^[0-9]+$/.test(text) || !Number.isSafeInteger(value) || value < 1)
    throw new UsageError(`${flag}: a positive integer`, help)
  return { [field]: value }
}

export async function pairCommand(args: string[], io: Io): Promise<number> {
  const help = HELP.pair as string
  const { values, positionals } = parse(args, {}, help)
  if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`, help)
  const server = serverOf(values.server as string | undefined, io, help)
  const created = await (await adminFor(server, io)).createSession()
  const initiator = created.initiator_url ?? relayUrl(server, created.id)
  const responder = created.responder_url ?? relayUrl(server, created.id)
  const relay = relayLauncher(io.env)
  io.stdout.write(
    [
      `# session ${created.id}, until ${created.expires_at}; one command per terminal, from any directory:`,
      `RELAY_TOKEN=${created.initiator_token} ${relay} attach ${initiator}`,
      `RELAY_TOKEN=${created.responder_token} ${relay} attach ${responder}`,
      '',
    ].join('\n'),
  )
  return 0
}

/** ws(s)://host/relay/<id> from the relay's http(s) or ws(s) URL. */
function relayUrl(server: string, id: string): string {
  const url = new URL(`relay/${encodeURIComponent(id)}`, server.endsWith('/') ? server : `${server}/`)
  if (url.protocol === 'http:') url.protocol = 'ws:'
  if (url.protocol === 'https:') url.protocol = 'wss:'
  return url.href
}

const SESSION_COLUMNS = ['id', 'state', 'peers', 'bytes_in', 'bytes_out', 'expires_at']

function sessionRow(s: Session): Record<string, string> {
  const peers = `${s.initiator_connected ? 'I' : '-'}${s.responder_connected ? 'R' : '-'}`
  return {
    id: s.id,
    state: s.state,
    peers,
    bytes_in: String(s.bytes_in),
    bytes_out: String(s.bytes_out),
    expires_at: s.expires_at,
  }
}

function createdRow(c: CreatedSession): Record<string, string> {
  return { id: c.id, initiator_token: c.initiator_token, responder_token: c.responder_token, expires_at: c.expires_at }
}

function table(rows: Array<Record<string, string>>, columns: string[]): string {
  if (rows.length === 0) return '(no sessions)\n'
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => (r[c] ?? '').length)))
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd()
  return (
    [line(columns.map((c) => c.toUpperCase())), ...rows.map((r) => line(columns.map((c) => r[c] ?? '')))].join('\n') +
    '\n'
  )
}

function parse(
  args: string[],
  options: Record<string, { type: 'string' | 'boolean' }>,
  help: string,
): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  try {
    return parseCommand(args, { server: { type: 'string' }, ...options })
  } catch (error) {
    throw new UsageError((error as Error).message, help)
  }
}
