// The spin.toml of an application as the control plane generates it for a build: one component
// per function, on the function's route, its source the component.wasm the builder leaves in
// the function's directory (builders/src/spin-toml.ts reads it back).
import type { Language } from './languages.js'

// What each language's component builds with, from the function's directory; every command
// leaves component.wasm there, which spin.toml names as the component's source.
const BUILD_COMMANDS: Record<Language, string> = {
  // A wasip1 command module for Spin's WAGI executor (EXECUTORS below).
  go: 'GOOS=wasip1 GOARCH=wasm go build -o component.wasm .',
  // Spin componentizes the wasip1 module at load; the builder does it before pushing.
  rust: 'cargo build --target wasm32-wasip1 --release && cp target/wasm32-wasip1/release/*.wasm component.wasm',
  js: 'npm install && npm run build',
  ts: 'npm install && npm run build',
}

// A go function is a wasip1 command module, not a component: Spin runs it with its WAGI
// executor (request in CGI variables and stdin, answer on stdout). The trigger says so, in
// `spin up` of the downloaded source as in the locked app the builder reads from it.
const EXECUTORS: Partial<Record<Language, string>> = { go: 'executor = { type = "wagi" }' }

/** The Spin manifest of an application: one component per function, on the function's route. */
export function spinManifest(
  app: { name: string; language: Language },
  functions: Array<{ name: string; route: string }>,
): string {
  const lines = ['spin_manifest_version = 2', '', '[application]', `name = ${toml(app.name)}`, 'version = "0.1.0"', '']
  for (const fn of functions) {
    const executor = EXECUTORS[app.language]
    lines.push(
      '[[trigger.http]]',
      `route = ${toml(fn.route)}`,
      `component = ${toml(fn.name)}`,
      ...(executor === undefined ? [] : [executor]),
      '',
    )
  }
  for (const fn of functions) {
    lines.push(
      `[component.${fn.name}]`,
      `source = ${toml(`functions/${fn.name}/component.wasm`)}`,
      'allowed_outbound_hosts = []',
      `[component.${fn.name}.build]`,
      `command = ${toml(BUILD_COMMANDS[app.language])}`,
      `workdir = ${toml(`functions/${fn.name}`)}`,
      '',
    )
  }
  return lines.join('\n')
}

// JSON strings are valid TOML basic strings for everything a route or name can hold.
const toml = (text: string): string => JSON.stringify(text)
