// The uWS app, over TLS when configured, and its listen socket. uWS reports both failures
// with next to nothing, so the errors here say what the operator must fix.
import { accessSync, constants } from 'node:fs'
import type * as Uws from 'uWebSockets.js'
import type { RelayConfig } from '../config.js'
import { ConfigError, ListenError } from '../errors.js'
import { whyCannotListen } from './listen-failure.js'
import type { TemplatedApp, us_listen_socket } from './uws.js'

export function createApp(uws: typeof Uws, config: Pick<RelayConfig, 'tlsCert' | 'tlsKey'>): TemplatedApp {
  if (config.tlsCert === '') return uws.App()
  for (const [flag, file] of [
    ['--tls-cert', config.tlsCert],
    ['--tls-key', config.tlsKey],
  ] as const) {
    try {
      accessSync(file, constants.R_OK)
    } catch {
      throw new ConfigError(`cannot read ${flag} file ${file}`)
    }
  }
  try {
    return uws.SSLApp({ cert_file_name: config.tlsCert, key_file_name: config.tlsKey })
  } catch {
    // uWS only says "App construction failed": the files are readable but not a PEM pair.
    throw new ConfigError(
      `--tls-cert ${config.tlsCert} and --tls-key ${config.tlsKey} are not a valid PEM certificate and key`,
    )
  }
}

/** uWS 20.30 takes (host, port, options, handler); its typings declare neither that form nor the options' values. */
type ListenWithHost = {
  listen(host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void): void
  listen(port: number, options: number, cb: (socket: us_listen_socket | false) => void): void
}

export function listen(uws: typeof Uws, app: TemplatedApp, host: string, port: number): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    const done = (socket: us_listen_socket | false): void => {
      if (socket === false) {
        void whyCannotListen(host, port).then((why) =>
          reject(new ListenError(`cannot listen on ${host || '*'}:${port}: ${why}`)),
        )
      } else resolve(socket)
    }
    // uWS binds with SO_REUSEPORT unless told otherwise: a second relay on the same port
    // would start and take half the connections, whose sessions live in the other process.
    const exclusive = (uws as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT: number }).LIBUS_LISTEN_EXCLUSIVE_PORT
    // An empty host listens on every interface, IPv4 and IPv6.
    if (host === '') (app as unknown as ListenWithHost).listen(port, exclusive, done)
    else (app as unknown as ListenWithHost).listen(host, port, exclusive, done)
  })
}
