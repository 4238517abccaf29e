// logs: the application's runtime log streamed to stdout as it arrives (never held whole).
import { getApp } from '../applications.js'
import { apiFor } from '../context.js'
import type { Io } from '../context.js'
import { UsageError } from '../errors.js'
import { parseCommand, stringOf } from '../table.js'

export async function logsCommand(args: string[], io: Io): Promise<number> {
  const parsed = parseCommand('logs', args)
  const tail = stringOf(parsed, 'tail')
  if (tail !== undefined && !/^[0-9]{1,6}$/.test(tail)) throw new UsageError(`--tail: not a number of lines: ${tail}`)
  const api = await apiFor(parsed, io)
  const app = await getApp(api, parsed.positionals[0] as string)
  const query = new URLSearchParams()
  if (parsed.values.follow === true) query.set('follow', 'true')
  if (tail !== undefined) query.set('tail', tail)
  const suffix = query.size === 0 ? '' : `?${query.toString()}`
  await api.stream(
    `/applications/${encodeURIComponent(app.id)}/logs${suffix}`,
    (chunk) => {
      io.stdout.write(chunk)
    },
    io.signal,
  )
  return 0
}
