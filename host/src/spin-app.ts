// A pulled Spin application served on Node: the artifact is pulled (registry or image-layout
// directory) and checked as containerd-shim-spin would, each component transpiled once, then
// one loopback HTTP port routes by the lock's http triggers to the component, which gets a
// fresh instance per request (as `jco serve --isolate-requests instance` does: one instance
// would answer once only). Each component runs behind preview2-shim's HTTPServer on a
// private loopback port; the public server in front routes, adds Spin's request headers,
// answers 404 for no route and 502 when a component fails, and bounds every request in time.
// Each instance runs sandboxed (sandbox/imports.ts): no files, environment or sockets, and
// outgoing HTTP only where its lock allows.
// The address guard goes first: it must be in place before preview2-shim starts its worker.
import './sandbox/address-guard.js'
import { once } from 'node:events'
import { mkdir } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import * as shimHttp from '@bytecodealliance/preview2-shim/http'
import { pullSpinApp } from '@session-relay/spin/artifact'
import type { LockedComponent } from '@session-relay/spin/format'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import { ALLOWED_RANGES_ENV, addressPolicy, parseRanges } from './sandbox/addresses.js'
import type { OutboundTarget } from './sandbox/allowed-hosts.js'
import { allowedHosts } from './sandbox/allowed-hosts.js'
import { sandboxedImports } from './sandbox/imports.js'
import type { Route } from './routes.js'
import { compileRoutes } from './routes.js'
import type { TranspiledComponent } from './transpile-cache.js'
import { transpiled } from './transpile-cache.js'
import { fromEnvironment, variablesImports } from './variables.js'
import { startWatchdog } from './watchdog.js'

type HostLogger = {
  info: (object: Record<string, unknown>, message: string) => void
  warn: (object: Record<string, unknown>, message: string) => void
  error: (object: Record<string, unknown>, message: string) => void
}

export type SpinAppOptions = {
  /** A registry reference or `oci-layout:/abs/dir[:tag][@digest]`. */
  ref: string
  /** 0 for any free port. */
  port: number
  host?: string
  /** Where transpiled components are kept, by digest. */
  cacheDir: string
  logger: HostLogger
  dockerConfigDir?: string | null
  insecureRegistry?: boolean
  /** Longest a request may take, in ms. */
  requestTimeoutMs?: number
  /** Largest request body passed to a component; a bigger one is answered 413. */
  maxBodyBytes?: number
  /** The variables' values by name, handed over in memory (the local runtime's way). */
  variables?: Record<string, string>
  /** Else where they come from (`SPIN_VARIABLE_<NAME>`, the shim's way); the process's environment by default. */
  env?: NodeJS.ProcessEnv
}

export type SpinApp = { url: string; digest: string; close: () => Promise<void> }

type Backend = { port: number; server: { stop: () => void } }

// The Node build of preview2-shim exports HTTPServer; its published types (the browser's) do not.
type IncomingHandler = { handle: (request: unknown, responseOutparam: unknown) => void }
type ShimHttpServer = { listen: (port: number, host: string) => void; address: () => unknown; stop: () => void }
const { HTTPServer } = shimHttp as unknown as { HTTPServer: new (handler: IncomingHandler) => ShimHttpServer }

type ShimTypes = {
  Fields: new () => unknown
  OutgoingResponse: new (headers: unknown) => { setStatusCode: (status: number) => void; body: () => unknown }
  OutgoingBody: { finish: (body: unknown, trailers: undefined) => void }
  ResponseOutparam: { set: (param: unknown, response: { tag: 'ok'; val: unknown }) => void }
}
const shimTypes = (shimHttp as unknown as { types: ShimTypes }).types

/** A 502 with no body, through wasi:http's own types; nothing when the component had already answered. */
function answerFailed (responseOutparam: unknown): void {
  try {
    const response = new shimTypes.OutgoingResponse(new shimTypes.Fields())
    response.setStatusCode(502)
    const body = response.body()
    shimTypes.ResponseOutparam.set(responseOutparam, { tag: 'ok', val: response })
    shimTypes.OutgoingBody.finish(body, undefined)
  } catch {
    // The response was sent before the trap: the front's timeout ends what is left of it.
  }
}

// jco's generated instantiate() names imports without their version.
const VARIABLES_INTERFACE = 'fermyon:spin/variables'
/** How long a refused request's connection may go on sending before it is closed. */
const LINGER_MS = 2000
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000
const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024

// Spin's key for where a component may send requests; a lock without it allows none.
function outboundHostsOf (component: LockedComponent): (target: OutboundTarget) => boolean {
  const entries = component.metadata?.allowed_outbound_hosts ?? []
  if (!Array.isArray(entries) || !entries.every((entry) => typeof entry === 'string')) throw new Error(`component ${component.id}: allowed_outbound_hosts is not a list of strings`)
  try {
    return allowedHosts(entries)
  } catch (error) {
    throw new Error(`component ${component.id}: ${(error as Error).message}`)
  }
}

export async function startSpinApp (options: SpinAppOptions): Promise<SpinApp> {
  const { logger } = options
  const host = options.host ?? '127.0.0.1'
  const ref = parseRef(options.ref)
  const store = await openStore(ref, { dockerConfigDir: options.dockerConfigDir ?? null, insecure: options.insecureRegistry ?? false })
  // parseRef gives every reference a tag or a digest.
  const reference = ref.digest ?? ref.tag ?? 'latest'
  const started = Date.now()
  const app = await pullSpinApp(store, reference)
  logger.info({ digest: app.digest, components: app.lockedApp.components.length, ms: Date.now() - started }, 'pulled the application')

  // Before anything is transpiled: a lock whose variables do not hold together does not start, as in Spin.
  const given = options.variables
  const variables = variablesImports(app.lockedApp, given !== undefined ? (name) => given[name] : fromEnvironment(options.env ?? process.env))
  // The ranges the guard in the shim's worker read from the same variable when it started.
  const addresses = addressPolicy(parseRanges(process.env[ALLOWED_RANGES_ENV] ?? ''))
  await mkdir(options.cacheDir, { recursive: true })
  const backends = new Map<string, Backend>()
  const stopBackends = (): void => {
    for (const backend of backends.values()) {
      try { backend.server.stop() } catch {}
    }
    backends.clear()
  }
  try {
    for (const component of app.lockedApp.components) {
      const digest = component.source.digest as string
      const transpileStarted = Date.now()
      const compiled = await transpiled(options.cacheDir, digest, app.wasm.get(digest) as Buffer)
      const allowed = outboundHostsOf(component)
      const imports = sandboxedImports({
        componentId: component.id,
        allowed,
        addresses,
        // The host and port only: a path or a query may carry what the function meant to keep.
        onRefused: (target, reason) => logger.warn({ component: component.id, ...target }, `outgoing request refused: ${reason}`),
      })
      backends.set(component.id, serveComponent(compiled, component.id, { ...imports, [VARIABLES_INTERFACE]: variables(component.id) }))
      logger.info({ component: component.id, ms: Date.now() - transpileStarted }, 'component ready')
    }
  } catch (error) {
    stopBackends()
    throw error
  }

  const routes: Route[] = app.lockedApp.triggers
    .filter((trigger) => trigger.trigger_type === 'http')
    .map((trigger) => ({ route: trigger.trigger_config.route, component: trigger.trigger_config.component }))
  const match = compileRoutes(routes)
  const timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES

  const front = http.createServer((request, response) => {
    const url = request.url ?? '/'
    const path = url.split('?')[0] as string
    const found = match(path)
    const backend = found === null ? undefined : backends.get(found.component)
    if (found === null || backend === undefined) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('no route\n')
      return
    }
    // preview2-shim's server holds a body in memory: refuse a big one before it is read.
    if (Number(request.headers['content-length'] ?? 0) > maxBodyBytes) {
      tooLarge(request, response)
      return
    }
    const headers: http.OutgoingHttpHeaders = {
      ...request.headers,
      'spin-full-url': `http://${request.headers.host ?? `${host}`}${url}`,
      'spin-path-info': found.pathInfo,
      'spin-matched-route': found.route,
      'spin-component-route': found.base,
      'spin-raw-component-route': found.route,
      'spin-base-path': '/',
      'spin-client-addr': `${request.socket.remoteAddress ?? ''}:${request.socket.remotePort ?? ''}`,
    }
    const upstream = http.request({ host: '127.0.0.1', port: backend.port, method: request.method, path: url, headers, timeout: timeoutMs }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(response)
    })
    upstream.on('timeout', () => upstream.destroy(new Error(`no answer within ${timeoutMs} ms`)))
    let refused = false
    upstream.on('error', (error) => {
      if (refused) return
      logger.warn({ component: found.component, err: error.message }, 'the component failed the request')
      if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' }).end('the component failed\n')
      else response.destroy()
    })
    // A body without a length (chunked) is counted as it passes.
    let received = 0
    request.on('data', (chunk: Buffer) => {
      received += chunk.length
      if (received <= maxBodyBytes || refused) return
      refused = true
      request.unpipe(upstream)
      upstream.destroy()
      tooLarge(request, response)
    })
    request.pipe(upstream)
  })
  const tooLarge = (request: http.IncomingMessage, response: http.ServerResponse): void => {
    if (response.headersSent) {
      response.destroy()
      return
    }
    // The rest of the body is drained, not kept, and the connection closes after the answer.
    // Closing with body bytes still unread makes the kernel reset the connection, and a reset
    // can discard the 413 at the client before it reads it (RFC 9112, 9.6): so the host
    // half-closes, drops what still arrives, and closes at the latest LINGER_MS later.
    const socket = request.socket
    socket.destroySoon = () => {
      socket.end()
      socket.once('end', () => socket.destroy())
      setTimeout(() => socket.destroy(), LINGER_MS).unref()
    }
    response.writeHead(413, { 'content-type': 'text/plain', connection: 'close' }).end(`request body larger than ${maxBodyBytes} bytes\n`)
    request.resume()
  }
  front.requestTimeout = timeoutMs
  front.listen(options.port, host)
  try {
    await once(front, 'listening')
  } catch (error) {
    stopBackends()
    throw error
  }
  // A second past the request deadline: the front's own timeout answers first when it can.
  const watchdog = startWatchdog(timeoutMs + 1000)
  const port = (front.address() as AddressInfo).port
  const shownHost = host.includes(':') ? `[${host}]` : host
  return {
    url: `http://${shownHost}:${port}`,
    digest: app.digest,
    close: async () => {
      watchdog.stop()
      front.closeAllConnections()
      await new Promise<void>((resolve) => front.close(() => resolve()))
      stopBackends()
    },
  }

  function serveComponent (compiled: TranspiledComponent, id: string, imports: Record<string, unknown>): Backend {
    const server = new HTTPServer({
      handle (request: unknown, responseOutparam: unknown) {
        try {
          const instance = compiled.instantiate(compiled.getCoreModule, imports)
          const handler = instance.incomingHandler
          if (handler === undefined) throw new Error('the component exports no wasi:http/incoming-handler')
          handler.handle(request, responseOutparam)
        } catch (error) {
          logger.error({ component: id, err: (error as Error).message }, 'the component trapped')
          // Thrown on, the error would end the host (preview2-shim rethrows it in its worker's
          // message handler): the instance is dropped and the request answered 502 instead.
          answerFailed(responseOutparam)
        }
      },
    })
    server.listen(0, '127.0.0.1')
    const address = server.address() as { port: number }
    return { port: address.port, server }
  }
}
