// An HTTPS proxy on loopback in front of the real API server (test/helpers/kube-apiserver.ts)
// that can end the watches going through it and nothing else, as the API server ends a watch at
// its timeout or a load balancer drains a connection: every other request in flight finishes.
// It can also refuse watches while lists go through, as a proxy that cannot hold a stream would.
// A TCP proxy (test/helpers/tcp-proxy.ts) cuts whatever is in flight with the watch, which is a
// different test. It terminates TLS with a certificate of its own, so the kubeconfig it writes
// names it as the server and trusts that certificate; the bearer token goes through unchanged.
// It keeps each request's method, target and headers as they arrived (what the API server
// receives), for the tests of what the control plane sends.
import { readFileSync, writeFileSync } from 'node:fs'
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import { createServer, request as httpsRequest } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type { Test } from 'tap'
import type { KubeNamespace } from './kube-apiserver.js'
import { selfSignedCertificate } from './tls.js'

export type WatchProxy = {
  /** A kubeconfig of the namespace's control-plane identity, through this proxy. */
  kubeconfig: string
  /** Watches open through the proxy now. */
  watches(): number
  /** End every open watch cleanly (the client sees its stream end and lists again). */
  endWatches(): void
  /** While true, a watch is answered 500 with a Status; every other request goes through. */
  refuseWatches: boolean
  /** The requests that came through so far, as they arrived (the last 10,000). */
  received: Array<{ method: string; url: string; headers: IncomingHttpHeaders }>
}

const RECEIVED_KEPT = 10_000

const isWatch = (request: IncomingMessage): boolean => /[?&]watch=(true|1)(&|$)/.test(request.url ?? '')

export async function kubeWatchProxy(t: Test, kube: KubeNamespace, dir: string): Promise<WatchProxy> {
  const upstream = new URL(kube.server.url)
  const { certPath, keyPath, certPem } = await selfSignedCertificate(t)
  const open = new Set<{ response: ServerResponse; upstream: IncomingMessage }>()
  const server = createServer({ cert: readFileSync(certPath), key: readFileSync(keyPath) }, (request, response) => {
    proxy.received.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers })
    if (proxy.received.length > RECEIVED_KEPT) proxy.received.shift()
    if (proxy.refuseWatches && isWatch(request)) {
      request.resume()
      const status = {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'watches are refused by this test',
        reason: 'InternalError',
        code: 500,
      }
      response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify(status))
      return
    }
    const forwarded = httpsRequest(
      {
        hostname: upstream.hostname,
        port: upstream.port,
        path: request.url,
        method: request.method,
        headers: request.headers,
        ca: kube.server.ca,
      },
      (answer) => {
        answer.on('error', () => response.destroy())
        response.writeHead(answer.statusCode ?? 502, answer.rawHeaders)
        if (isWatch(request)) {
          // Headers at once, as the API server sends them: the client's watch starts on them.
          response.flushHeaders()
          const entry = { response, upstream: answer }
          open.add(entry)
          response.on('close', () => open.delete(entry))
        }
        answer.pipe(response)
      },
    )
    forwarded.on('error', () => response.destroy())
    // The client went away before its answer was complete: so does the upstream request.
    response.on('close', () => {
      if (!response.writableFinished) forwarded.destroy()
    })
    request.pipe(forwarded)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  const kubeconfig = join(dir, 'kubeconfig-watch-proxy.yaml')
  const config = JSON.parse(readFileSync(kube.kubeconfig, 'utf8')) as {
    clusters: Array<{ cluster: Record<string, string> }>
  }
  for (const { cluster } of config.clusters) {
    cluster.server = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
    cluster['certificate-authority-data'] = Buffer.from(certPem).toString('base64')
  }
  writeFileSync(kubeconfig, JSON.stringify(config), { mode: 0o600 })
  const proxy: WatchProxy = {
    kubeconfig,
    refuseWatches: false,
    received: [],
    watches: () => open.size,
    endWatches() {
      for (const entry of open) {
        entry.upstream.unpipe(entry.response)
        entry.upstream.destroy()
        entry.response.end()
      }
      open.clear()
    },
  }
  return proxy
}
