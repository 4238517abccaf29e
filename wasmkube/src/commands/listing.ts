// apps, builds, delete: read or remove, printed as a table or as the server's JSON.
import { getApp } from '../applications.js'
import type { Summary } from '../api/types.js'
import { apiFor } from '../context.js'
import type { Io } from '../context.js'
import { parseCommand } from '../table.js'

export async function appsCommand(args: string[], io: Io): Promise<number> {
  const parsed = parseCommand('apps', args)
  const apps = await (await apiFor(parsed, io)).json<Summary[]>('GET', '/applications')
  if (parsed.values.json === true) return printJson(io, apps)
  io.stdout.write(
    table(
      ['NAME', 'LANGUAGE', 'CREATED'],
      apps.map((app) => [app.name, app.language, app.createdAt]),
    ),
  )
  return 0
}

export async function buildsCommand(args: string[], io: Io): Promise<number> {
  const parsed = parseCommand('builds', args)
  const app = await getApp(await apiFor(parsed, io), parsed.positionals[0] as string)
  if (parsed.values.json === true) return printJson(io, app.builds)
  io.stdout.write(
    table(
      ['ID', 'STATUS', 'CREATED', 'ERROR'],
      app.builds.map((build) => [build.id, build.status, build.createdAt, firstLine(build.error)]),
    ),
  )
  return 0
}

export async function deleteCommand(args: string[], io: Io): Promise<number> {
  const parsed = parseCommand('delete', args)
  const api = await apiFor(parsed, io)
  const app = await getApp(api, parsed.positionals[0] as string)
  await api.json('DELETE', `/applications/${encodeURIComponent(app.id)}`)
  io.stderr.write(`deleted ${app.name}\n`)
  return 0
}

export function printJson(io: Io, value: unknown): number {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
  return 0
}

export function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)))
  return (
    [header, ...rows]
      .map((row) =>
        row
          .map((cell, column) => cell.padEnd(widths[column] ?? 0))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  )
}

const firstLine = (text: string | null): string => (text ?? '').split('\n')[0]?.slice(0, 100) ?? ''
