// The `wasmkube` command: dispatch, --help from the command table, errors to exit codes
// (0 done, 1 the server refused or a build failed, 2 misuse).
import { deleteCommand, appsCommand, buildsCommand } from './commands/listing.js'
import { concurrencyCommand } from './commands/concurrency.js'
import { deployCommand } from './commands/deploy.js'
import { initCommand } from './commands/init.js'
import { invokeCommand } from './commands/invoke.js'
import { loginCommand } from './commands/login.js'
import { logsCommand } from './commands/logs.js'
import { tracesCommand } from './commands/traces.js'
import { varsCommand } from './commands/vars.js'
import type { Io } from './context.js'
import { UsageError, WasmkubeError } from './errors.js'
import { COMMANDS, commandHelp, mainHelp } from './table.js'
import type { CommandName } from './table.js'

const RUN: Record<CommandName, (args: string[], io: Io) => Promise<number>> = {
  login: loginCommand,
  init: initCommand,
  deploy: deployCommand,
  invoke: invokeCommand,
  logs: logsCommand,
  builds: buildsCommand,
  traces: tracesCommand,
  apps: appsCommand,
  delete: deleteCommand,
  vars: varsCommand,
  concurrency: concurrencyCommand,
}

export async function run(argv: string[], io: Io): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(`${mainHelp()}\n`)
    return name === undefined ? 2 : 0
  }
  if (!(name in COMMANDS)) {
    io.stderr.write(`wasmkube: unknown command ${JSON.stringify(name)}\n\n${mainHelp()}\n`)
    return 2
  }
  const command = name as CommandName
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(`${commandHelp(command)}\n`)
    return 0
  }
  try {
    return await RUN[command](rest, io)
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`wasmkube ${command}: ${error.message}\n(wasmkube ${command} --help for usage)\n`)
      return 2
    }
    const message = error instanceof WasmkubeError ? error.message : `${(error as Error).message ?? String(error)}`
    io.stderr.write(`wasmkube ${command}: ${message}\n`)
    return 1
  }
}
