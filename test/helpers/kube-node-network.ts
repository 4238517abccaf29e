// The pod network as the test API server reaches it, the one part of the path from the API
// server's service proxy to a function that is a stand-in. In a cluster the API server reaches
// pod IPs through konnectivity: its egress selector (--egress-selector-config-file, the
// `cluster` egress) dials each address through an HTTP CONNECT proxy. Here that proxy is this
// file, on a Unix socket: the kubelet stand-in gives each pod an IP from a pod CIDR no route on
// this machine reaches (10.244.0.0/16), and whatever serves the pod (the shim's worker) is
// routed to it here, so the API server's own proxy code (EndpointSlices, pod IP checks, the
// transport) runs unchanged and every byte still travels on 127.0.0.1. Loopback addresses (the
// kubelet stand-in's log endpoint, the Node's InternalIP) pass through as the node's own.
import type { IncomingMessage } from 'node:http'
import { createServer } from 'node:http'
import type { Socket } from 'node:net'
import { connect } from 'node:net'

export type NodeNetwork = {
  /** The Unix socket the API server's egress dialer connects to. */
  socket: string
  /** A fresh pod IP, as a node's CNI hands one out. */
  allocate(): string
  /** Connections to `ip:port` reach `target` (a loopback port) until `unroute`. */
  route(ip: string, port: number, target: { host: string; port: number }): void
  unroute(ip: string, port: number): void
  /** The CONNECT targets asked for so far, in order ("ip:port"). */
  dialed(): string[]
  close(): Promise<void>
}

const POD_CIDR = [10, 244]
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|\[::1\]|localhost)$/
// The most CONNECT targets kept for `dialed`, so a long file's memory stays bounded.
const DIALED_KEPT = 1000

export async function startNodeNetwork(socket: string): Promise<NodeNetwork> {
  const routes = new Map<string, { host: string; port: number }>()
  const dialed: string[] = []
  const open = new Set<Socket>()
  let next = 0
  const server = createServer((_request, response) => {
    response.writeHead(405, { 'content-type': 'text/plain' }).end('only CONNECT is spoken here\n')
  })
  server.on('connect', (request: IncomingMessage, client: Socket, head: Buffer) => {
    open.add(client)
    client.on('close', () => open.delete(client))
    client.on('error', () => {})
    const address = request.url ?? ''
    dialed.push(address)
    if (dialed.length > DIALED_KEPT) dialed.shift()
    const split = address.lastIndexOf(':')
    const host = address.slice(0, split)
    const port = Number(address.slice(split + 1))
    const target = LOOPBACK.test(host) ? { host: '127.0.0.1', port } : routes.get(address)
    if (split < 0 || !Number.isInteger(port) || target === undefined) {
      // What a node answers for an address no pod holds: nothing there to connect to.
      client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n')
      return
    }
    const upstream = connect(target.port, target.host)
    open.add(upstream)
    upstream.on('close', () => open.delete(upstream))
    upstream.on('error', () => {
      if (upstream.connecting) client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n')
      else client.destroy()
    })
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection established\r\n\r\n')
      if (head.length > 0) upstream.write(head)
      upstream.pipe(client)
      client.pipe(upstream)
    })
    client.on('close', () => upstream.destroy())
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(socket, resolve)
  })
  return {
    socket,
    allocate() {
      next++
      if (next >= 254 * 255) throw new Error('the pod CIDR is exhausted')
      return `${POD_CIDR.join('.')}.${Math.floor(next / 254)}.${(next % 254) + 1}`
    },
    route: (ip, port, target) => routes.set(`${ip}:${port}`, target),
    unroute: (ip, port) => routes.delete(`${ip}:${port}`),
    dialed: () => [...dialed],
    close: async () => {
      for (const socket of open) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** The API server's egress selector configuration: the `cluster` egress over HTTP CONNECT on `socket`. */
export function egressSelectorConfiguration(socket: string): string {
  return JSON.stringify({
    apiVersion: 'apiserver.k8s.io/v1beta1',
    kind: 'EgressSelectorConfiguration',
    egressSelections: [
      {
        name: 'cluster',
        connection: { proxyProtocol: 'HTTPConnect', transport: { uds: { udsName: socket } } },
      },
    ],
  })
}
