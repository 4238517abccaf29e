// The Spin manifest the control plane generates (spin/src/manifest.ts,
// `spinManifest`) read back into what the builder needs: the application's name and version,
// each http trigger's route, component and executor, each component's source path and outbound
// hosts. Only that generated subset of TOML is read (tables, arrays of tables, `key = value`
// with JSON-compatible strings, numbers, booleans, arrays of strings and one-line inline tables
// of those, as `executor = { type = "wagi" }`); anything else is refused rather than guessed at.
import { isAbsolute, normalize } from 'node:path'

export type SpinManifest = {
  name: string
  version: string
  triggers: Array<{ route: string; component: string; executor?: Executor }>
  components: Array<{ id: string; source: string; allowedOutboundHosts: string[]; workdir: string | null }>
}

/** Spin's http executors: `http` (a component, the default) or `wagi` (a wasip1 command module). */
type Executor = { type: 'http' | 'wagi' }

type Table = Record<string, unknown>

export function parseSpinToml(text: string): SpinManifest {
  const root: Table = {}
  let current: Table = root
  const lines = text.split('\n')
  lines.forEach((raw, index) => {
    const line = raw.trim()
    const where = `spin.toml:${index + 1}`
    if (line === '' || line.startsWith('#')) return
    let match = /^\[\[([A-Za-z0-9_.-]+)\]\]$/.exec(line)
    if (match !== null) {
      const path = (match[1] as string).split('.')
      const parent = tableAt(root, path.slice(0, -1), where)
      const key = path.at(-1) as string
      const list = (parent[key] ??= []) as unknown
      if (!Array.isArray(list)) throw new Error(`${where}: ${key} is not an array of tables`)
      current = {}
      list.push(current)
      return
    }
    match = /^\[([A-Za-z0-9_.-]+)\]$/.exec(line)
    if (match !== null) {
      current = tableAt(root, (match[1] as string).split('.'), where)
      return
    }
    match = /^([A-Za-z0-9_-]+)\s*=\s*(.+)$/.exec(line)
    if (match === null) throw new Error(`${where}: not a line of the generated manifest`)
    current[match[1] as string] = valueOf(match[2] as string, where)
  })
  return manifestOf(root)
}

function valueOf(text: string, where: string): unknown {
  const inline = /^\{\s*(.*?)\s*\}$/.exec(text)
  if (inline !== null) return inlineTable(inline[1] as string, where)
  try {
    return JSON.parse(text)
  } catch {
    throw new Error(`${where}: the value is not a plain string, number, boolean or array`)
  }
}

// `key = value, key = value` between the braces, each value a plain string, number or boolean.
function inlineTable(text: string, where: string): Table {
  const table: Table = {}
  const pair = /^([A-Za-z0-9_-]+)\s*=\s*("(?:[^"\\]|\\.)*"|true|false|-?[0-9]+)\s*(?:,\s*|$)/
  let rest = text
  while (rest !== '') {
    const match = pair.exec(rest)
    if (match === null) throw new Error(`${where}: not an inline table of the generated manifest`)
    table[match[1] as string] = JSON.parse(match[2] as string) as unknown
    rest = rest.slice(match[0].length)
  }
  return table
}

function tableAt(root: Table, path: string[], where: string): Table {
  let table = root
  for (const key of path) {
    const next = (table[key] ??= {}) as unknown
    if (typeof next !== 'object' || next === null || Array.isArray(next))
      throw new Error(`${where}: ${key} is not a table`)
    table = next as Table
  }
  return table
}

function executorOf(value: unknown, index: number): Executor {
  const { type, ...rest } = (typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {}) as Table
  if ((type !== 'http' && type !== 'wagi') || Object.keys(rest).length > 0)
    throw new Error(`spin.toml: trigger.http #${index + 1}: executor must be { type = "http" } or { type = "wagi" }`)
  return { type }
}

function manifestOf(root: Table): SpinManifest {
  if (root.spin_manifest_version !== 2) throw new Error('spin.toml: spin_manifest_version must be 2')
  const application = (root.application ?? {}) as Table
  if (typeof application.name !== 'string') throw new Error('spin.toml: [application] needs a name')
  const http = ((root.trigger as Table | undefined)?.http ?? []) as Table[]
  const triggers = http.map((trigger, index) => {
    if (typeof trigger.route !== 'string' || typeof trigger.component !== 'string')
      throw new Error(`spin.toml: trigger.http #${index + 1} needs a route and a component`)
    if (trigger.executor === undefined) return { route: trigger.route, component: trigger.component }
    return { route: trigger.route, component: trigger.component, executor: executorOf(trigger.executor, index) }
  })
  const componentTables = (root.component ?? {}) as Record<string, Table>
  const components = Object.entries(componentTables).map(([id, component]) => {
    if (typeof component.source !== 'string') throw new Error(`spin.toml: component ${id} needs a source path`)
    const hosts = component.allowed_outbound_hosts ?? []
    if (!Array.isArray(hosts) || !hosts.every((host) => typeof host === 'string'))
      throw new Error(`spin.toml: component ${id}: allowed_outbound_hosts must be strings`)
    const build = component.build as Table | undefined
    const workdir = typeof build?.workdir === 'string' ? build.workdir : null
    // The builder works in the archive's directory: a path out of it would build someone else's files.
    for (const path of [component.source, workdir]) {
      if (path !== null && (isAbsolute(path) || normalize(path).split(/[\\/]/).includes('..')))
        throw new Error(`spin.toml: component ${id}: ${JSON.stringify(path)} leaves the application's directory`)
    }
    return { id, source: component.source, allowedOutboundHosts: hosts, workdir }
  })
  for (const trigger of triggers) {
    if (!components.some((component) => component.id === trigger.component))
      throw new Error(`spin.toml: the trigger on ${trigger.route} names no component ${trigger.component}`)
  }
  return {
    name: application.name,
    version: typeof application.version === 'string' ? application.version : '0.1.0',
    triggers,
    components,
  }
}
