// The only way out of a build's sandbox: a SOCKS5 proxy on a Unix socket that the fetch steps'
// tools (cargo's libcurl, Go's net/http through the in-sandbox bridge) use for every connection.
// It connects to a short list of package registries by name and nothing else: no IP literal, no
// other port, no name that resolves to a loopback, private, link-local or otherwise internal
// address (so a registry name cannot be pointed at the control plane by DNS either), and it logs
// each connection it opens or refuses in the build log. Bounded: a handshake must finish in
// HANDSHAKE_MS, at most MAX_CONNECTIONS at once, and an idle tunnel is closed.
import { lookup } from 'node:dns/promises'
import { BlockList, connect, createServer, isIP } from 'node:net'
import type { Server, Socket } from 'node:net'
import { chmod, rm } from 'node:fs/promises'

export type FetchProxy = { close(): Promise<void> }

export type FetchProxyOptions = {
  /** Unix socket path to listen on (created; removed on close). */
  socket: string
  /** Host names a fetch may reach, exactly (no wildcards), on `port`. */
  hosts: string[]
  port?: number
  log: (line: string) => void
  /** Name to addresses; the machine's resolver unless a test injects one. */
  resolve?: (host: string) => Promise<string[]>
  maxConnections?: number
  idleMs?: number
  /** Which resolved addresses are refused; every internal one unless a test serves a registry on loopback. */
  refused?: (address: string) => boolean
}

const HANDSHAKE_MS = 10_000
const MAX_CONNECTIONS = 32
const IDLE_MS = 120_000

// The ranges the worker refuses to functions (worker/src/outbound/address.rs) but the three
// documentation ranges, which reach nothing on the Internet and are where some networks (this
// project's own machines among them) answer for the registries' names; a tenant names no host.
const INTERNAL = new BlockList()
for (const [base, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  INTERNAL.addSubnet(base, bits, 'ipv4')
for (const [base, bits] of [
  ['::', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  INTERNAL.addSubnet(base, bits, 'ipv6')

/** Whether `address` is one no fetch may reach. */
export function isInternal(address: string): boolean {
  const family = isIP(address)
  if (family === 0) return true
  // An IPv4-mapped IPv6 address reaches the IPv4 address it carries.
  const mapped = /^::ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address)
  if (mapped !== null) {
    const v4 =
      mapped[1] ??
      [mapped[2], mapped[3]]
        .flatMap((hex) => [parseInt(hex as string, 16) >> 8, parseInt(hex as string, 16) & 255])
        .join('.')
    return INTERNAL.check(v4, 'ipv4')
  }
  return INTERNAL.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

// SOCKS5 (RFC 1928) reply codes.
const REFUSED_BY_RULES = 0x02
const HOST_UNREACHABLE = 0x04
const COMMAND_UNSUPPORTED = 0x07
const ADDRESS_UNSUPPORTED = 0x08

const defaultResolve = async (host: string): Promise<string[]> =>
  (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address)

export async function startFetchProxy(options: FetchProxyOptions): Promise<FetchProxy> {
  const allowed = new Set(options.hosts.map((host) => host.toLowerCase()))
  const port = options.port ?? 443
  const resolve = options.resolve ?? defaultResolve
  const maxConnections = options.maxConnections ?? MAX_CONNECTIONS
  const idleMs = options.idleMs ?? IDLE_MS
  const refused = options.refused ?? isInternal
  const open = new Set<Socket>()
  const clients = new Set<Socket>()
  const server: Server = createServer((client) => {
    if (clients.size >= maxConnections) {
      options.log(`fetch proxy: refused a connection: ${maxConnections} already open`)
      client.destroy()
      return
    }
    clients.add(client)
    open.add(client)
    client.on('close', () => {
      clients.delete(client)
      open.delete(client)
    })
    client.on('error', () => client.destroy())
    client.setTimeout(HANDSHAKE_MS, () => client.destroy())
    void handshake(client).then(
      (target) => {
        if (target !== null) void tunnel(client, target)
      },
      () => client.destroy(),
    )
  })

  const reply = (client: Socket, code: number): void => {
    client.end(Buffer.from([0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0]))
  }

  async function handshake(client: Socket): Promise<{ host: string; port: number } | null> {
    const reader = bufferedReader(client)
    const [version, methods] = await reader.take(2)
    if (version !== 0x05) throw new Error('not SOCKS5')
    const offered = await reader.take(methods as number)
    if (!offered.includes(0x00)) {
      client.end(Buffer.from([0x05, 0xff]))
      return null
    }
    client.write(Buffer.from([0x05, 0x00]))
    const [, command, , type] = await reader.take(4)
    let host: string
    if (type === 0x03) {
      const [length] = await reader.take(1)
      host = shown((await reader.take(length as number)).toString('latin1').toLowerCase())
    } else {
      // An address literal: refused whatever it is, since only names are on the list.
      await reader.take(type === 0x01 ? 4 : type === 0x04 ? 16 : 0)
      await reader.take(2)
      options.log(`fetch proxy: refused an address literal: only registry names are allowed`)
      reply(client, type === 0x01 || type === 0x04 ? REFUSED_BY_RULES : ADDRESS_UNSUPPORTED)
      return null
    }
    const wanted = (await reader.take(2)).readUInt16BE(0)
    if (command !== 0x01) {
      options.log(`fetch proxy: refused ${host}:${wanted}: only CONNECT is supported`)
      reply(client, COMMAND_UNSUPPORTED)
      return null
    }
    if (!allowed.has(host) || wanted !== port) {
      options.log(`fetch proxy: refused ${host}:${wanted}: not a package registry of this build`)
      reply(client, REFUSED_BY_RULES)
      return null
    }
    reader.release()
    return { host, port: wanted }
  }

  async function tunnel(client: Socket, target: { host: string; port: number }): Promise<void> {
    let addresses: string[]
    try {
      addresses = await resolve(target.host)
    } catch (error) {
      options.log(`fetch proxy: ${target.host} does not resolve: ${(error as Error).message}`)
      return reply(client, HOST_UNREACHABLE)
    }
    const internal = addresses.filter(refused)
    if (addresses.length === 0 || internal.length > 0) {
      options.log(`fetch proxy: refused ${target.host}: it resolves to ${internal.join(', ') || 'nothing'}`)
      return reply(client, REFUSED_BY_RULES)
    }
    const address = addresses[0] as string
    const upstream = connect({ host: address, port: target.port })
    open.add(upstream)
    upstream.on('close', () => open.delete(upstream))
    upstream.once('error', (error) => {
      options.log(`fetch proxy: ${target.host} (${address}): ${error.message}`)
      if (!client.destroyed && client.writable && client.bytesWritten <= 2) reply(client, HOST_UNREACHABLE)
      else client.destroy()
    })
    upstream.once('connect', () => {
      options.log(`fetch proxy: connected to ${target.host}:${target.port} (${address})`)
      client.write(Buffer.from([0x05, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0]))
      client.setTimeout(idleMs, () => client.destroy())
      upstream.setTimeout(idleMs, () => upstream.destroy())
      client.pipe(upstream)
      upstream.pipe(client)
      client.on('close', () => upstream.destroy())
      upstream.on('close', () => client.destroy())
    })
  }

  await rm(options.socket, { force: true })
  await new Promise<void>((done, fail) => {
    server.once('error', fail)
    server.listen(options.socket, () => done())
  })
  // Connecting takes write permission on the socket, and the step runs as 65534: the socket sits
  // in the build's private directory and is bound into that one sandbox only.
  await chmod(options.socket, 0o666)
  return {
    async close() {
      for (const socket of open) socket.destroy()
      await new Promise<void>((done) => server.close(() => done()))
      await rm(options.socket, { force: true })
    },
  }
}

/** A name as the build log may show it: a registry's name as it is, anything else quoted and escaped. */
function shown(host: string): string {
  return /^[a-z0-9.-]+$/.test(host) ? host : JSON.stringify(host)
}

/** Reads exact byte counts from a socket during the handshake, then hands the rest back. */
function bufferedReader(socket: Socket): { take(count: number): Promise<Buffer>; release(): void } {
  let pending = Buffer.alloc(0)
  let waiter: (() => void) | null = null
  const onData = (chunk: Buffer): void => {
    pending = Buffer.concat([pending, chunk])
    // A handshake is a few hundred bytes at most: more before the tunnel is not SOCKS.
    if (pending.length > 1024) socket.destroy()
    waiter?.()
  }
  const onEnd = (): void => waiter?.()
  socket.on('data', onData)
  socket.on('end', onEnd)
  socket.on('close', onEnd)
  return {
    async take(count) {
      while (pending.length < count) {
        if (socket.destroyed || socket.readableEnded) throw new Error('closed during the handshake')
        await new Promise<void>((wake) => (waiter = wake))
        waiter = null
      }
      const head = pending.subarray(0, count)
      pending = pending.subarray(count)
      return head
    },
    release() {
      socket.off('data', onData)
      socket.off('end', onEnd)
      socket.off('close', onEnd)
      socket.setTimeout(0)
      // Held until the tunnel pipes it: nothing may be read and dropped while the name resolves.
      socket.pause()
      if (pending.length > 0) socket.unshift(pending)
    },
  }
}
