// A child of bench/idle-pairs.ts: attaches one slot of every session it is given and holds
// the connections open, idle, until told to stop. One process per slot keeps each under the
// open-file limit (20,000 here) while the relay holds both sides.
import { readFileSync } from 'node:fs'
import type { Socket } from 'node:net'
import { rawWebSocket } from './frames.js'

type Input = { host: string; port: number; attaches: Array<{ id: string; token: string }> }

const CONCURRENCY = 200

async function main(): Promise<void> {
  const input = JSON.parse(readFileSync(process.argv[2] as string, 'utf8')) as Input
  const sockets: Socket[] = []
  let next = 0
  async function worker(): Promise<void> {
    while (next < input.attaches.length) {
      const { id, token } = input.attaches[next++]!
      sockets.push(await rawWebSocket(input.host, input.port, `/relay/${id}`, token, () => {}))
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  process.stdout.write(JSON.stringify({ attached: sockets.length }) + '\n')
  process.on('SIGTERM', () => {
    for (const socket of sockets) socket.destroy()
    process.exit(0)
  })
}

main().catch((error: unknown) => {
  process.stderr.write(`idle clients: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
