// Spin's variables interface (`fermyon:spin/variables@2.0.0`, what the js SDK and the
// templates import) answered as Spin and containerd-shim-spin answer it: a component reads one
// of its `config` keys; the key's template ("{{ name }}", or text around such parts) names
// application variables the lock declares; each is resolved from the environment first
// (`SPIN_VARIABLE_<NAME>`, Spin's env provider, how the SpinApp's values reach the shim), then
// its default. Followed: spinframework/spin crates/expressions/src/lib.rs (Key::validate, the
// resolver's errors). Values are never logged.
import type { LockedApp } from '@session-relay/spin/format'
import { variableNameProblem as keyProblem } from '@session-relay/spin/variable-name'

type VariableError = { tag: 'invalid-name' | 'undefined' | 'provider' | 'other'; val: string }
/** What jco's generated import expects: a result, `err` carrying the interface's error variant. */
type GetResult = { tag: 'ok'; val: string } | { tag: 'err'; val: VariableError }

export type VariablesImport = { get: (name: string) => GetResult }

type Part = { literal: string } | { variable: string }

const ENV_PREFIX = 'SPIN_VARIABLE_'

function parseTemplate (template: string, declared: Set<string>, where: string): Part[] {
  const parts: Part[] = []
  let rest = template
  while (rest !== '') {
    const open = rest.indexOf('{{')
    if (open === -1) {
      parts.push({ literal: rest })
      break
    }
    if (open > 0) parts.push({ literal: rest.slice(0, open) })
    const close = rest.indexOf('}}', open)
    if (close === -1) throw new Error(`${where}: unterminated {{ in the template`)
    const name = rest.slice(open + 2, close).trim()
    if (!declared.has(name)) throw new Error(`${where}: the template names ${JSON.stringify(name)}, which the application does not declare`)
    parts.push({ variable: name })
    rest = rest.slice(close + 2)
  }
  return parts
}

/** Values as the shim reads them: `SPIN_VARIABLE_<NAME>` in an environment. */
export function fromEnvironment (env: NodeJS.ProcessEnv): (name: string) => string | undefined {
  return (name) => env[`${ENV_PREFIX}${name.toUpperCase()}`]
}

/**
 * The import for each component of `app`, values from `valueOf` (read now: a new value is a
 * restart, as in a pod). Throws when the lock is inconsistent, as Spin refuses to load it.
 */
export function variablesImports (app: LockedApp, valueOf: (name: string) => string | undefined): (componentId: string) => VariablesImport {
  const declared = app.variables ?? {}
  const names = new Set(Object.keys(declared))
  for (const name of names) {
    const problem = keyProblem(name)
    if (problem !== null) throw new Error(`the application's variable ${JSON.stringify(name)} ${problem}`)
  }
  const values = new Map<string, string>()
  for (const name of names) {
    const value = valueOf(name)
    const fallback = (declared[name] as { default?: unknown } | null)?.default
    if (value !== undefined) values.set(name, value)
    else if (typeof fallback === 'string') values.set(name, fallback)
  }
  const configs = new Map<string, Map<string, Part[]>>()
  for (const component of app.components) {
    const templates = new Map<string, Part[]>()
    for (const [key, template] of Object.entries(component.config ?? {})) {
      const problem = keyProblem(key)
      if (problem !== null) throw new Error(`component ${component.id}: config key ${JSON.stringify(key)} ${problem}`)
      templates.set(key, parseTemplate(template, names, `component ${component.id}: config ${key}`))
    }
    configs.set(component.id, templates)
  }
  return (componentId) => {
    const templates = configs.get(componentId) ?? new Map<string, Part[]>()
    return {
      get (name) {
        const problem = keyProblem(name)
        if (problem !== null) return { tag: 'err', val: { tag: 'invalid-name', val: `${JSON.stringify(name)}: ${problem}` } }
        const parts = templates.get(name)
        if (parts === undefined) return { tag: 'err', val: { tag: 'undefined', val: `no variable for ${JSON.stringify(componentId)}.${JSON.stringify(name)}` } }
        let text = ''
        for (const part of parts) {
          if ('literal' in part) {
            text += part.literal
            continue
          }
          const value = values.get(part.variable)
          if (value === undefined) return { tag: 'err', val: { tag: 'provider', val: `no provider resolved required variable ${JSON.stringify(part.variable)}` } }
          text += value
        }
        return { tag: 'ok', val: text }
      },
    }
  }
}
