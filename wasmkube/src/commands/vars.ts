// vars set|unset|list: PATCH replaces the whole variable map, so set and unset send the
// current map changed. Secrets come back as {"secret": true}, and sending that keeps the stored
// value, so a change to one variable never touches a secret's value. A running deployment gets
// the change without a rebuild: the command returns once the deployment is ready again, so the
// next request answers with the new values (until then the previous version answers).
import { getApp, patchSettings } from '../applications.js'
import type { ApplicationPatch, Variables } from '../api/types.js'
import { apiFor } from '../context.js'
import type { Io } from '../context.js'
import { UsageError } from '../errors.js'
import { parseCommand } from '../table.js'
import { printJson, table } from './listing.js'

export async function varsCommand(args: string[], io: Io): Promise<number> {
  const parsed = parseCommand('vars', args)
  const [action, name, ...items] = parsed.positionals as [string, string, ...string[]]
  if (action !== 'set' && action !== 'unset' && action !== 'list')
    throw new UsageError(`vars: unknown action ${JSON.stringify(action)} (set, unset or list)`)
  if (action === 'list' && items.length > 0) throw new UsageError('vars list takes only the application name')
  if (action !== 'list' && items.length === 0) throw new UsageError(`vars ${action}: name at least one variable`)
  if (action !== 'set' && parsed.values.secret === true) throw new UsageError('--secret goes with vars set')
  const api = await apiFor(parsed, io)
  const app = await getApp(api, name)
  const current: Variables = app.variables ?? {}
  if (action === 'list') {
    if (parsed.values.json === true) return printJson(io, current)
    io.stdout.write(
      table(
        ['NAME', 'VALUE'],
        Object.entries(current).map(([key, variable]) => [key, shown(variable)]),
      ),
    )
    return 0
  }
  const next: NonNullable<ApplicationPatch['variables']> = { ...current }
  if (action === 'set') {
    for (const item of items) {
      const at = item.indexOf('=')
      if (at <= 0) throw new UsageError(`vars set: ${JSON.stringify(item)} is not KEY=VALUE`)
      const value = item.slice(at + 1)
      next[item.slice(0, at)] = parsed.values.secret === true ? { secret: value } : { value }
    }
  } else {
    for (const key of items) {
      if (!(key in next)) throw new UsageError(`vars unset: ${app.name} has no variable ${JSON.stringify(key)}`)
      delete next[key]
    }
  }
  const updated = await patchSettings(api, app, { variables: next })
  if (parsed.values.json === true) return printJson(io, updated.variables ?? {})
  const names = items.map((item) => item.split('=')[0]).join(', ')
  const message = updated.deployment?.message ? `: ${updated.deployment.message}` : ''
  io.stderr.write(`${action === 'set' ? 'set' : 'unset'} ${names} on ${app.name}${message}\n`)
  return 0
}

function shown(variable: Variables[string]): string {
  if ('value' in variable) return variable.value
  if ('secret' in variable) return '(secret)'
  return `(from Secret ${variable.secretRef.name}/${variable.secretRef.key})`
}
