// The locked application a build pushes, as `spin build` + `spin registry push` would lock the
// manifest: its triggers, its components, and the variables the functions declare with their
// defaults (spin/src/function-variables.ts), each mapped into the config of the component that
// declared it, as spin.toml's `[variables]` and `[component.X.variables]` would be.
import type { LockedApp } from '@session-relay/spin/format'
import { configReading } from '@session-relay/spin/format'
import type { DeclaredVariables } from '@session-relay/spin/function-variables'
import { FUNCTION_VARIABLES_FILE, parseFunctionVariables } from '@session-relay/spin/function-variables'
import type { SpinManifest } from './spin-toml.js'

/** Per component id, the variables its function's `variables.toml` declares. */
export type ComponentVariables = Map<string, DeclaredVariables>

/**
 * Each component's declared variables, read from the build's files. Throws an Error naming the
 * file and line for a declaration it refuses, or for two functions giving one name two defaults:
 * an application has one value per name.
 */
export function declaredVariables(manifest: SpinManifest, files: Record<string, string>): ComponentVariables {
  const declared: ComponentVariables = new Map()
  const owner = new Map<string, { component: string; value: string }>()
  for (const component of manifest.components) {
    if (component.workdir === null) continue
    const path = `${component.workdir}/${FUNCTION_VARIABLES_FILE}`
    const text = files[path]
    if (text === undefined) continue
    let variables: DeclaredVariables
    try {
      variables = parseFunctionVariables(text)
    } catch (error) {
      throw new Error(`${component.workdir}/${(error as Error).message}`)
    }
    for (const [name, value] of Object.entries(variables)) {
      const first = owner.get(name)
      if (first !== undefined && first.value !== value)
        throw new Error(
          `${path}: ${name} has another default in function ${first.component}; an application has one value per name`,
        )
      owner.set(name, { component: component.id, value })
    }
    declared.set(component.id, variables)
  }
  return declared
}

export function lockedAppOf(manifest: SpinManifest, declared: ComponentVariables = new Map()): LockedApp {
  const defaults = new Map<string, string>()
  for (const vars of declared.values()) for (const [name, value] of Object.entries(vars)) defaults.set(name, value)
  const variables: Record<string, { default: string }> = {}
  for (const name of [...defaults.keys()].sort()) variables[name] = { default: defaults.get(name) as string }
  return {
    spin_lock_version: 1,
    metadata: { name: manifest.name, version: manifest.version, authors: [], triggers: {}, trigger: { type: 'http' } },
    ...(Object.keys(variables).length === 0 ? {} : { variables }),
    triggers: manifest.triggers.map((trigger) => ({
      id: `${trigger.component}-http-trigger`,
      trigger_type: 'http',
      // The manifest's executor as written: go's spin.toml names WAGI (spin/src/manifest.ts).
      trigger_config: {
        component: trigger.component,
        route: trigger.route,
        ...(trigger.executor === undefined ? {} : { executor: trigger.executor }),
      },
    })),
    components: manifest.components.map((component) => {
      const config = configReading(Object.keys(declared.get(component.id) ?? {}))
      return {
        id: component.id,
        metadata: { allowed_outbound_hosts: component.allowedOutboundHosts },
        source: { content_type: 'application/wasm', source: `file://${component.source}` },
        ...(Object.keys(config).length === 0 ? {} : { config }),
      }
    }),
  }
}
