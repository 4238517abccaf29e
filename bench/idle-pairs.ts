// npm run bench:idle -- [--pairs 9980] [--targets relay,ws]
//
// Memory per idle attached pair: the server's RSS before, with N sessions created, and with
// both slots of every session attached and idle. The relay holds 2N sockets and the open-file
// limit here is 20,000 per process, so N defaults to 9,980; the clients are split over two
// processes, one attaching every initiator and one every responder.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { rssBytes } from './proc.js'
import type { ServerName } from './servers.js'
import { createSessions, scriptPath, startServer } from './servers.js'

/** How long the server gets to settle (idle GC) before each reading. */
const SETTLE_MS = 3_000

async function main(): Promise<void> {
  const argv = process.argv.slice(2)
  const option = (name: string, fallback: string): string => {
    const i = argv.indexOf(name)
    return i === -1 ? fallback : (argv[i + 1] ?? fallback)
  }
  const pairs = Number(option('--pairs', '9980'))
  const targets = option('--targets', 'relay,ws').split(',') as ServerName[]
  const rows: string[] = []
  for (const target of targets) {
    const server = await startServer(target)
    const port = server.port
    try {
      await sleep(SETTLE_MS)
      const before = rssBytes(server.pid)
      const sessions = await createSessions(port, pairs)
      await sleep(SETTLE_MS)
      const created = rssBytes(server.pid)
      const clients = await Promise.all(
        [0, 1].map((slot) =>
          attachAll(
            port,
            sessions.map((s) => ({ id: s.id, token: slot === 0 ? s.initiator_token : s.responder_token })),
          ),
        ),
      )
      await sleep(SETTLE_MS)
      const attached = rssBytes(server.pid)
      for (const client of clients) client.kill('SIGTERM')
      const perPair = (attached - before) / pairs
      rows.push(
        [
          target.padEnd(6),
          String(pairs).padStart(6),
          mib(before),
          mib(created),
          mib(attached),
          `${((created - before) / pairs / 1024).toFixed(2)} KiB`.padStart(10),
          `${(perPair / 1024).toFixed(2)} KiB`.padStart(10),
        ].join('  '),
      )
    } finally {
      server.process.kill('SIGTERM')
    }
  }
  process.stdout.write(
    ['target   pairs  RSS before  RSS created  RSS attached  per session  per attached pair', ...rows].join('\n') +
      '\n',
  )
}

async function attachAll(port: number, attaches: Array<{ id: string; token: string }>): Promise<ChildProcess> {
  const file = join(tmpdir(), `idle-${process.pid}-${Math.random().toString(36).slice(2)}.json`)
  writeFileSync(file, JSON.stringify({ host: '127.0.0.1', port, attaches }))
  const child = spawn(process.execPath, [scriptPath('./idle-clients.js'), file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  await new Promise<void>((resolve, reject) => {
    child.stdout?.once('data', () => resolve())
    child.once('exit', (code) => reject(new Error(`idle clients exited with ${code}`)))
  })
  return child
}

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`.padStart(11)
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

main().catch((error: unknown) => {
  process.stderr.write(`bench:idle: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
