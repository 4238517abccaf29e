// A function's own variables: `variables.toml` beside its source declares each variable it
// reads with the value it has when its application sets none, as Spin's `[variables]` table
// does in spin.toml (`greeting = { default = "hello" }`). The builder puts them in the lock it
// pushes; the application's own values (PATCH variables) still win. Without a default a read of
// an unset variable fails, and a guest pays for that failure on every request (componentize-js
// throws an error with a captured stack), so the templates declare theirs.
//
// The file comes from a tenant's source: only that one line shape is read, and anything else
// is refused with its line number rather than guessed at.
import { isVariableName } from './variable-name.js'

export const FUNCTION_VARIABLES_FILE = 'variables.toml'

/** As many as an application may set (control/src/model/app-settings.ts). */
export const MAX_DECLARED_VARIABLES = 100
export const MAX_DEFAULT_LENGTH = 16 * 1024
const MAX_NAME_LENGTH = 64

/** Each declared name and its default, in the order written. */
export type DeclaredVariables = Record<string, string>

const LINE = /^([A-Za-z0-9_-]+)\s*=\s*\{\s*default\s*=\s*(".*")\s*\}$/

/** The declarations of one `variables.toml`; throws an Error naming the line for anything else. */
export function parseFunctionVariables(text: string): DeclaredVariables {
  const declared: DeclaredVariables = Object.create(null) as DeclaredVariables
  let count = 0
  text.split('\n').forEach((raw, index) => {
    const where = `${FUNCTION_VARIABLES_FILE}:${index + 1}`
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) return
    const match = LINE.exec(line)
    if (match === null) throw new Error(`${where}: not a line of the form name = { default = "text" }`)
    const name = match[1] as string
    if (name.length > MAX_NAME_LENGTH || !isVariableName(name))
      throw new Error(
        `${where}: ${JSON.stringify(name.slice(0, MAX_NAME_LENGTH))} is not a Spin variable name (at most ${MAX_NAME_LENGTH} lowercase letters, digits and single "_", starting with a letter)`,
      )
    if (Object.hasOwn(declared, name)) throw new Error(`${where}: ${name} is declared twice`)
    if (++count > MAX_DECLARED_VARIABLES) throw new Error(`${where}: more than ${MAX_DECLARED_VARIABLES} variables`)
    declared[name] = defaultOf(match[2] as string, where)
  })
  return { ...declared }
}

// A TOML basic string: JSON's string syntax is a subset of it, which is all that is read.
function defaultOf(literal: string, where: string): string {
  let value: unknown
  try {
    value = JSON.parse(literal)
  } catch {
    throw new Error(`${where}: the default is not one double-quoted string`)
  }
  if (typeof value !== 'string') throw new Error(`${where}: the default is not one double-quoted string`)
  if (value.length > MAX_DEFAULT_LENGTH)
    throw new Error(`${where}: the default is longer than ${MAX_DEFAULT_LENGTH} characters`)
  return value
}
