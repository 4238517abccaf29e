// Every command, its arguments and options in one table: argument parsing and each command's
// --help are both made from it, so the help cannot drift from what is accepted.
import { parseArgs } from 'node:util'
import { UsageError } from './errors.js'

type Option = { type: 'string' | 'boolean'; short?: string; multiple?: boolean; value?: string; help: string }

export type CommandSpec = {
  usage: string
  summary: string
  /** Positional arguments: at least, at most (Infinity: any number). */
  positionals: [number, number]
  options: Record<string, Option>
  details?: string
}

const server: Record<string, Option> = {
  server: {
    type: 'string',
    value: 'URL',
    help: 'the control plane (default: $WASMKUBE_SERVER, else http://127.0.0.1:8081)',
  },
  'token-file': {
    type: 'string',
    value: 'FILE',
    help: 'read the bearer token from FILE (default: $WASMKUBE_TOKEN, else the stored login)',
  },
}
const json: Record<string, Option> = { json: { type: 'boolean', help: "print the server's JSON instead of text" } }

export const COMMANDS = {
  login: {
    usage: 'login [--client-id ID]',
    summary: 'log in with the device flow at the identity provider the server names',
    positionals: [0, 0],
    options: {
      ...server,
      'client-id': {
        type: 'string',
        value: 'ID',
        help: "OAuth client id (default: the server's, from /api/v1/console-config)",
      },
    },
    details:
      'Prints a URL and a code to enter there, waits for approval, and keeps the tokens in\n$XDG_CONFIG_HOME/wasmkube/tokens.json (~/.config when unset, mode 0600); they are refreshed\nwithout asking while the refresh token lasts.',
  },
  init: {
    usage: 'init DIR --language js|ts|go|rust [--name NAME]',
    summary: "write the language's hello-world function into DIR (no server needed)",
    positionals: [1, 1],
    options: {
      language: { type: 'string', value: 'L', help: 'js, ts, go or rust' },
      name: { type: 'string', value: 'NAME', help: "the function's name (default: DIR's base name)" },
    },
  },
  deploy: {
    usage: 'deploy DIR --name NAME [--language L]',
    summary: 'upload DIR, build it, wait for the deployment to answer, print its URL',
    positionals: [1, 1],
    options: {
      ...server,
      ...json,
      name: { type: 'string', value: 'NAME', help: 'the application (created when it does not exist)' },
      language: {
        type: 'string',
        value: 'L',
        help: 'js, ts, go or rust (default: from go.mod, Cargo.toml, tsconfig.json or package.json)',
      },
    },
    details:
      "DIR becomes the application's first function's source. Skipped: .git, node_modules, target,\ndist, and what .gitignore or .wasmkubeignore name (names and simple * patterns). What the server\nwould refuse (a binary or non-UTF-8 file, too many files) is refused before anything is sent.\nThe build log goes to stderr; a failed build exits 1 with the compiler's error.",
  },
  invoke: {
    usage: "invoke NAME [PATH] [--function F] [--method M] [--data BODY] [-H 'K: V']",
    summary: 'call a function: its body on stdout, its status on stderr; exit 0 for 2xx, 1 otherwise',
    positionals: [1, 2],
    options: {
      ...server,
      ...json,
      function: { type: 'string', value: 'F', help: "the function (default: the application's first)" },
      method: { type: 'string', short: 'X', value: 'M', help: 'HTTP method (default: GET, or POST with --data)' },
      data: { type: 'string', short: 'd', value: 'BODY', help: 'request body; @FILE reads FILE' },
      header: { type: 'string', short: 'H', multiple: true, value: "'K: V'", help: 'a request header (repeatable)' },
    },
  },
  logs: {
    usage: 'logs NAME [-f] [--tail N]',
    summary: "the application's runtime log (its functions' stderr)",
    positionals: [1, 1],
    options: {
      ...server,
      follow: { type: 'boolean', short: 'f', help: 'keep printing new lines until interrupted' },
      tail: { type: 'string', value: 'N', help: 'only the last N lines' },
    },
  },
  builds: {
    usage: 'builds NAME [--json]',
    summary: "the application's builds, newest first",
    positionals: [1, 1],
    options: { ...server, ...json },
  },
  traces: {
    usage: 'traces NAME [TRACE] [--json]',
    summary: "the application's last traces (builds, invokes) the server keeps; with TRACE, its spans",
    positionals: [1, 2],
    options: { ...server, ...json },
    details:
      "The control plane keeps the last --traces-kept traces in memory (default 100). With TRACE\neach span is a line: its start from the trace's, its duration, its status, its name\nindented under its parent.",
  },
  apps: {
    usage: 'apps [--json]',
    summary: 'the applications you can see',
    positionals: [0, 0],
    options: { ...server, ...json },
  },
  delete: {
    usage: 'delete NAME',
    summary: 'delete an application with its functions, builds and deployment',
    positionals: [1, 1],
    options: { ...server },
  },
  vars: {
    usage: 'vars set NAME KEY=VALUE... [--secret] | vars unset NAME KEY... | vars list NAME [--json]',
    summary:
      "an application's variables; a change reaches the running deployment without a rebuild, and set/unset wait until it does",
    positionals: [2, Infinity],
    options: {
      ...server,
      ...json,
      secret: { type: 'boolean', help: 'set: store the values as secrets (never shown again)' },
    },
  },
  concurrency: {
    usage: 'concurrency NAME [--max-running N] [--max-queued N] [--reset] [--json]',
    summary:
      "an application's requests running at once and waiting on one machine's shared worker; a change waits until the deployment runs it",
    positionals: [1, 1],
    options: {
      ...server,
      ...json,
      'max-running': { type: 'string', value: 'N', help: "its requests running at once, at most the platform's" },
      'max-queued': {
        type: 'string',
        value: 'N',
        help: "its requests waiting for a turn (then 429), at most the platform's",
      },
      reset: { type: 'boolean', help: "both back to the platform's values" },
    },
    details:
      "Without options, prints the values in force. The platform's values (GET /policy) are the\ndefault and the largest; a value left out keeps the application's own, or the platform's.\nA cluster keeps these but does not apply them (a SpinApp has no such limit).",
  },
} satisfies Record<string, CommandSpec>

export type CommandName = keyof typeof COMMANDS

const COMMON_HELP = 'Exit codes: 0 done, 1 the server refused or a build failed (its reason on stderr), 2 misuse.'

export function mainHelp(): string {
  const lines = Object.values(COMMANDS).map((spec: CommandSpec) => `  wasmkube ${spec.usage}\n      ${spec.summary}`)
  return `wasmkube: the function platform's command-line tool\n\nUsage:\n${lines.join('\n')}\n\nRun "wasmkube COMMAND --help" for one command's options.\n${COMMON_HELP}`
}

export function commandHelp(name: CommandName): string {
  const spec: CommandSpec = COMMANDS[name]
  const help: Option = { type: 'boolean', help: 'this text' }
  const options = Object.entries({ ...spec.options, help }).map(([key, option]) => {
    const left = `${option.short === undefined ? '    ' : `-${option.short}, `}--${key}${option.value === undefined ? '' : ` ${option.value}`}`
    return `  ${left.padEnd(26)} ${option.help}`
  })
  return `Usage: wasmkube ${spec.usage}\n\n${spec.summary}.\n${spec.details === undefined ? '' : `\n${spec.details}\n`}\nOptions:\n${options.join('\n')}\n\n${COMMON_HELP}`
}

export type Parsed = { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] }

/** The arguments of one command, checked against its table entry; a UsageError otherwise. */
export function parseCommand(name: CommandName, args: string[]): Parsed {
  const spec: CommandSpec = COMMANDS[name]
  let parsed: Parsed
  try {
    parsed = parseArgs({ args, options: spec.options, allowPositionals: true, strict: true }) as Parsed
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  const [least, most] = spec.positionals
  if (parsed.positionals.length < least) throw new UsageError(`missing arguments: wasmkube ${spec.usage}`)
  if (parsed.positionals.length > most)
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[most])}`)
  return parsed
}

export function stringOf(parsed: Parsed, key: string): string | undefined {
  const value = parsed.values[key]
  return typeof value === 'string' ? value : undefined
}
