// The `relay` command: dispatch, errors to exit codes (0 done, 1 failure, 2 usage).
import { RelayError } from '../errors.js'
import { attachCommand } from './attach-command.js'
import type { Io } from './context.js'
import { loginCommand } from './login-command.js'
import { pairCommand, sessionCommand } from './session-command.js'
import { HELP, UsageError } from './usage.js'

const COMMANDS: Record<string, (args: string[], io: Io) => Promise<number>> = {
  login: loginCommand,
  session: sessionCommand,
  attach: attachCommand,
  pair: pairCommand,
}

export async function run(argv: string[], io: Io): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(`${HELP.main}\n`)
    return name === undefined ? 2 : 0
  }
  const command = COMMANDS[name]
  if (command === undefined) {
    io.stderr.write(`relay: unknown command ${name}\n${HELP.main}\n`)
    return 2
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(`${HELP[name]}\n`)
    return 0
  }
  try {
    return await command(rest, io)
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`relay ${name}: ${error.message}\n(relay ${name} --help for usage)\n`)
      return 2
    }
    if (error instanceof RelayError) {
      io.stderr.write(`relay ${name}: ${error.message}\n`)
      return 1
    }
    io.stderr.write(`relay ${name}: ${error instanceof Error ? error.message : String(error)}\n`)
    return 1
  }
}

const io: Io = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env }
const code = await run(process.argv.slice(2), io)
// stdin may still be open (a terminal): exit once stdout is flushed instead of waiting for it.
process.stdout.write('', () => process.exit(code))
