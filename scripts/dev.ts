// `npm run dev`: the relay and the control plane side by side on their embedded defaults, for
// development only (both without authentication), their output interleaved line by line with
// a prefix. Ctrl+C (or SIGTERM) stops both gracefully; a second Ctrl+C kills them.
//
//   relay          127.0.0.1:8080  --no-auth
//   control plane  127.0.0.1:8081  --dev-insecure-skip-auth, PGlite in ./data/control
//
// With authentication off, both listen on loopback only: anyone on the network could
// otherwise create and delete applications. `npm run dev -- --host 0.0.0.0` (or another
// address) opens them up. RELAY_ADDR / PLATFORM_ADDR still set the addresses; one given as
// ":port" gets the --host.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

type Service = { name: string; script: string; args: string[]; color: number }

const host = devHost(process.argv.slice(2))

// Asked for by name (--host): both processes refuse a non-loopback address without authentication otherwise.
const anywhere = /^(127\.|::1$|localhost$)/.test(host) ? [] : ['--dev-insecure-listen-anywhere']

const SERVICES: Service[] = [
  { name: 'relay', script: '../relay/src/main.js', args: ['--no-auth', '--addr', addressFor(process.env.RELAY_ADDR, 8080), ...anywhere], color: 36 },
  { name: 'control', script: '../control/src/main.js', args: ['--dev-insecure-skip-auth', '--addr', addressFor(process.env.PLATFORM_ADDR, 8081), ...anywhere], color: 35 },
]

function devHost (argv: string[]): string {
  if (argv.length === 0) return '127.0.0.1'
  const [flag, value] = argv[0]?.startsWith('--host=') === true ? ['--host', argv[0].slice(7)] : argv
  if (flag !== '--host' || value === undefined || argv.length > (argv[0] === '--host' ? 2 : 1)) {
    process.stderr.write('dev: usage: npm run dev [-- --host ADDRESS]   (default 127.0.0.1; 0.0.0.0 for every interface)\n')
    process.exit(2)
  }
  return value
}

// An address from the environment wins; one without a host (":port") and the default get --host.
function addressFor (configured: string | undefined, port: number): string {
  const shownHost = host.includes(':') ? `[${host}]` : host
  if (configured === undefined || configured === '') return `${shownHost}:${port}`
  return configured.startsWith(':') ? `${shownHost}${configured}` : configured
}

const width = Math.max(...SERVICES.map((s) => s.name.length))
const colored = process.stdout.isTTY === true

function prefix (service: Service): string {
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

function stop (signal: NodeJS.Signals): void {
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
process.on('exit', () => { for (const child of children.values()) child.kill('SIGKILL') })
