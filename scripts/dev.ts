// `npm run dev`: the relay and the control plane side by side on their embedded defaults, for
// development only (both without authentication), their output interleaved line by line with
// a prefix. Ctrl+C (or SIGTERM) stops both gracefully; a second Ctrl+C kills them.
//
//   relay          127.0.0.1:8080  --no-auth
//   control plane  127.0.0.1:8081  --dev-insecure-skip-auth, PGlite in ./data/control
//
// With authentication off, both listen on loopback only: anyone on the network could
// otherwise create and delete applications. `--host 0.0.0.0` (or another address) opens them
// up; `--relay-port` and `--control-port` move them (`npm run dev -- --help`). RELAY_ADDR /
// PLATFORM_ADDR still set whole addresses; one given as ":port" gets the --host.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type { Setting } from '@session-relay/common/config/settings'
import { anyText, ConfigError, helpRequested, readSettings, usage } from '@session-relay/common/config/settings'

type Service = { name: string; script: string; args: string[]; color: number }

type DevConfig = { host: string; relayPort: number; controlPort: number }

function parsePort(text: string): number {
  const port = Number(text)
  if (!/^\d+$/.test(text) || port > 65535)
    throw new Error(`${JSON.stringify(text)} is not a port (0-65535; 0 lets the system pick)`)
  return port
}

const DEV_SETTINGS: ReadonlyArray<Setting<DevConfig>> = [
  {
    key: 'host',
    env: 'DEV_HOST',
    flag: '--host',
    default: '127.0.0.1',
    parse: anyText,
    help: 'the address both listen on; 0.0.0.0 for every interface (anyone who reaches it has both APIs)',
  },
  {
    key: 'relayPort',
    env: 'DEV_RELAY_PORT',
    flag: '--relay-port',
    default: '8080',
    parse: parsePort,
    help: "the relay's port",
  },
  {
    key: 'controlPort',
    env: 'DEV_CONTROL_PORT',
    flag: '--control-port',
    default: '8081',
    parse: parsePort,
    help: "the control plane's port (the console is served there too)",
  },
]

// The services crash deep inside undici on an older Node: say which one they need instead.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number)
if (major < 22 || (major === 22 && minor < 18)) {
  process.stderr.write(
    `dev: needs Node 22.18 or newer (package.json "engines"); this is Node ${process.versions.node}. Run it as \`npm run dev\`, which uses the project's own Node from node_modules/.bin.\n`,
  )
  process.exit(2)
}

const config = devConfig(process.argv.slice(2))
const host = config.host

// Asked for by name (--host): both processes refuse a non-loopback address without authentication otherwise.
const anywhere = /^(127\.|::1$|localhost$)/.test(host) ? [] : ['--dev-insecure-listen-anywhere']

const SERVICES: Service[] = [
  {
    name: 'relay',
    script: '../../relay/dist/main.js',
    args: ['--no-auth', '--addr', addressFor(process.env.RELAY_ADDR, config.relayPort), ...anywhere],
    color: 36,
  },
  {
    name: 'control',
    script: '../../control/dist/main.js',
    args: [
      '--dev-insecure-skip-auth',
      '--addr',
      addressFor(process.env.PLATFORM_ADDR, config.controlPort),
      ...anywhere,
    ],
    color: 35,
  },
]

function devConfig(argv: string[]): DevConfig {
  if (helpRequested(argv)) {
    process.stdout.write(usage(DEV_SETTINGS, 'npm run dev --'))
    process.exit(0)
  }
  try {
    return readSettings(DEV_SETTINGS, argv, process.env)
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    process.stderr.write(`dev: ${error.message}\n\n${usage(DEV_SETTINGS, 'npm run dev --')}`)
    process.exit(2)
  }
}

// An address from the environment wins; one without a host (":port") and the default get --host.
function addressFor(configured: string | undefined, port: number): string {
  const shownHost = host.includes(':') ? `[${host}]` : host
  if (configured === undefined || configured === '') return `${shownHost}:${port}`
  return configured.startsWith(':') ? `${shownHost}${configured}` : configured
}

const width = Math.max(...SERVICES.map((s) => s.name.length))
const colored = process.stdout.isTTY === true

function prefix(service: Service): string {
  const label = service.name.padEnd(width)
  return colored ? `\u001b[${service.color}m${label} |\u001b[0m ` : `${label} | `
}

const children = new Map<Service, ChildProcess>()
let stopping = false
let exitCode = 0

for (const service of SERVICES) {
  // A process group of its own: Ctrl+C reaches only this script, which then stops each child
  // exactly once (a child getting SIGINT from the terminal and SIGTERM from here would die
  // on the second signal instead of shutting down).
  const child = spawn(process.execPath, [fileURLToPath(new URL(service.script, import.meta.url)), ...service.args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  children.set(service, child)
  const label = prefix(service)
  createInterface({ input: child.stdout }).on('line', (line) => process.stdout.write(label + line + '\n'))
  createInterface({ input: child.stderr }).on('line', (line) => process.stderr.write(label + line + '\n'))
  child.on('exit', (code, signal) => {
    children.delete(service)
    process.stdout.write(`${label}exited (${signal ?? `code ${code}`})\n`)
    if (!stopping) {
      // One service down leaves a half-working setup that is easy to misread: stop the other.
      exitCode = code === 0 || code === null ? 1 : code
      stop('SIGTERM')
    }
    if (children.size === 0) process.exit(exitCode)
  })
}

function stop(signal: NodeJS.Signals): void {
  if (stopping) {
    // Asked twice: no more waiting.
    for (const child of children.values()) child.kill('SIGKILL')
    return
  }
  stopping = true
  for (const child of children.values()) child.kill(signal === 'SIGINT' ? 'SIGTERM' : signal)
}

process.on('SIGINT', () => stop('SIGINT'))
process.on('SIGTERM', () => stop('SIGTERM'))
// If this script dies some other way, do not leave the services running in their own groups.
process.on('exit', () => {
  for (const child of children.values()) child.kill('SIGKILL')
})
