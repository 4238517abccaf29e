// Node's attach: `ws` with the slot token in the Authorization header.
import { openConnection } from './connection.js'
import type { AttachOptions, Connection } from './connection.js'
import { nodeConnector } from './socket-node.js'

/** Attaches to a slot (`url` is ws(s)://host/relay/<id>) with its slot token. */
export function attach(url: string, slotToken: string, opts: AttachOptions = {}): Promise<Connection> {
  return openConnection(nodeConnector, url, slotToken, opts)
}
