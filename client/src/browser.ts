// The browser entry point: the same API without the device login (a browser app runs its own
// authorization-code + PKCE flow and passes the access token to adminClient) and with the
// platform WebSocket, which sends the slot token as ?token=.
import { openConnection } from './connection.js'
import type { AttachOptions, Connection } from './connection.js'
import { browserConnector } from './socket-browser.js'

export function attach(url: string, slotToken: string, opts: AttachOptions = {}): Promise<Connection> {
  return openConnection(browserConnector, url, slotToken, opts)
}

export { discover } from './discover.js'
export type { DiscoverOptions } from './discover.js'
export { adminClient } from './admin.js'
export type { AdminClient, AdminOptions } from './admin.js'
export type { AttachOptions, CloseInfo, Connection, ConnectionEvent, Recreated } from './connection.js'
export type { Message } from './socket.js'
export { RelayError } from './errors.js'
export type { RelayErrorCode } from './errors.js'
export { RELAY_CLOSE_CODES, describeClose } from './close-codes.js'
export type { CloseCodeInfo } from './close-codes.js'
export type { CreatedSession, Discovery, Session, SessionLimits, SessionPage, SessionState } from './types.js'
