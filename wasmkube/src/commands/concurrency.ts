// concurrency: an application's share of the shared worker (issue 40). The API shows the values
// in force, the platform's filling what the application left unset; a value equal to the
// platform's is taken as unset, so changing one field does not pin today's platform value into
// the other (the console does the same).
import { getApp, patchSettings } from '../applications.js'
import type { Concurrency, ResourcePolicy } from '../api/types.js'
import { apiFor } from '../context.js'
import type { Io } from '../context.js'
import { UsageError } from '../errors.js'
import { parseCommand, stringOf } from '../table.js'
import type { Parsed } from '../table.js'
import { printJson } from './listing.js'

function countOf(parsed: Parsed, flag: string): number | undefined {
  const text = stringOf(parsed, flag)
  if (text === undefined) return undefined
  if (!/^\d+$/.test(text)) throw new UsageError(`--${flag}: expected a whole number, not ${JSON.stringify(text)}`)
  return Number(text)
}

export async function concurrencyCommand(args: string[], io: Io): Promise<number> {
  const parsed = parseCommand('concurrency', args)
  const maxRunning = countOf(parsed, 'max-running')
  const maxQueued = countOf(parsed, 'max-queued')
  const reset = parsed.values.reset === true
  if (reset && (maxRunning !== undefined || maxQueued !== undefined))
    throw new UsageError('--reset goes alone, without --max-running or --max-queued')
  const api = await apiFor(parsed, io)
  const app = await getApp(api, parsed.positionals[0] as string)
  const shown = (concurrency: Concurrency | undefined): number => {
    if (parsed.values.json === true) return printJson(io, concurrency ?? null)
    if (concurrency === undefined) {
      io.stdout.write('the server shows no concurrency (an older control plane)\n')
      return 0
    }
    io.stdout.write(`running at once: ${concurrency.maxRunning}\nwaiting:         ${concurrency.maxQueued}\n`)
    return 0
  }
  if (!reset && maxRunning === undefined && maxQueued === undefined) return shown(app.concurrency)

  const platform = (await api.json<ResourcePolicy>('GET', '/policy')).concurrency
  const own = (field: keyof Concurrency): number | undefined =>
    app.concurrency?.[field] === platform[field] ? undefined : app.concurrency?.[field]
  const change = reset ? {} : { maxRunning: maxRunning ?? own('maxRunning'), maxQueued: maxQueued ?? own('maxQueued') }
  const updated = await patchSettings(api, app, { concurrency: change })
  const message = updated.deployment?.message ? `: ${updated.deployment.message}` : ''
  io.stderr.write(`concurrency of ${app.name} set${message}\n`)
  return shown(updated.concurrency)
}
