// invoke: the function's answer as a program's output: the body on stdout (the raw bytes when
// the API sent them base64), the status on stderr, exit 0 for 2xx.
import { readFile } from 'node:fs/promises'
import type { InvokeRequest, InvokeResult } from '../api/types.js'
import { getApp } from '../applications.js'
import { apiFor } from '../context.js'
import type { Io } from '../context.js'
import { UsageError, WasmkubeError } from '../errors.js'
import { parseCommand, stringOf } from '../table.js'
import { printJson } from './listing.js'

export async function invokeCommand(args: string[], io: Io): Promise<number> {
  const parsed = parseCommand('invoke', args)
  const [name, path = '/'] = parsed.positionals as [string, string?]
  if (!path.startsWith('/')) throw new UsageError(`PATH must start with "/": ${path}`)
  const headers: Record<string, string[]> = {}
  for (const header of (parsed.values.header as string[] | undefined) ?? []) {
    const at = header.indexOf(':')
    if (at <= 0) throw new UsageError(`-H ${JSON.stringify(header)}: not "Name: value"`)
    const key = header.slice(0, at).trim().toLowerCase()
    ;(headers[key] ??= []).push(header.slice(at + 1).trim())
  }
  const data = stringOf(parsed, 'data')
  const body =
    data === undefined ? undefined : data.startsWith('@') ? await readBody(data.slice(1)) : Buffer.from(data, 'utf8')
  const method = (stringOf(parsed, 'method') ?? (body === undefined ? 'GET' : 'POST')).toUpperCase()
  const api = await apiFor(parsed, io)
  const app = await getApp(api, name)
  const fnName = stringOf(parsed, 'function')
  const fn = fnName === undefined ? app.functions[0] : app.functions.find((f) => f.name === fnName)
  if (fn === undefined)
    throw new WasmkubeError(
      'not_found',
      `${app.name} has no function ${JSON.stringify(fnName ?? '')}: it has ${app.functions.map((f) => f.name).join(', ')}`,
    )
  const result = await api.json<InvokeResult>(
    'POST',
    `/applications/${encodeURIComponent(app.id)}/functions/${encodeURIComponent(fn.id)}/invoke`,
    {
      method,
      path,
      headers,
      ...(body === undefined ? {} : { body: body.toString('base64'), bodyIsBase64: true }),
    } satisfies InvokeRequest,
  )
  if (typeof result?.status !== 'number' || typeof result.body !== 'string')
    throw new WasmkubeError('bad_answer', 'the invoke answer has no status and body')
  const ok = result.status >= 200 && result.status < 300
  if (parsed.values.json === true) {
    printJson(io, result)
    return ok ? 0 : 1
  }
  io.stdout.write(result.bodyIsBase64 ? Buffer.from(result.body, 'base64') : result.body)
  io.stderr.write(
    `${result.status}${result.truncated ? ' (body truncated at 1 MiB)' : ''} in ${result.durationMs} ms\n`,
  )
  return ok ? 0 : 1
}

async function readBody(file: string): Promise<Buffer> {
  try {
    return await readFile(file)
  } catch (error) {
    throw new WasmkubeError('local', `--data @${file}: ${(error as Error).message}`, { cause: error })
  }
}
