// What a hostile build must not reach: a file holding a random secret, a path it must not write
// and an HTTP server on loopback that counts every connection. A test plants their names in a
// tenant's source and asserts afterwards that none was touched.
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'

export type Canary = {
  /** A file only the machine's own users may read; its content is `secret`. */
  file: string
  secret: string
  /** A path nothing may create. */
  marker: string
  /** http://127.0.0.1:{port}/ of the counting server. */
  url: string
  port: number
  /** Connections the server has accepted so far. */
  connections(): number
  markerWritten(): boolean
}

export async function startCanary(t: Test): Promise<Canary> {
  const dir = await mkdtemp(join(tmpdir(), 'canary-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const secret = `canary-${randomBytes(16).toString('hex')}`
  const file = join(dir, 'secret.key')
  await writeFile(file, `${secret}\n`, { mode: 0o600 })
  // Readable by everyone on the machine, as a careless data directory would be: the sandbox,
  // not the file's mode, must keep a build from it.
  await chmod(dir, 0o755)
  await chmod(file, 0o644)
  let connections = 0
  const server = createServer((socket) => {
    connections++
    socket.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n')
  })
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  const marker = join(dir, 'marker')
  return {
    file,
    secret,
    marker,
    url: `http://127.0.0.1:${port}/`,
    port,
    connections: () => connections,
    markerWritten: () => existsSync(marker),
  }
}
