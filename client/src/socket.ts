// What a connection needs from a WebSocket, so one implementation of attach serves Node (`ws`)
// and browsers (the platform WebSocket).

export type Message = { type: 'text'; data: string } | { type: 'binary'; data: Uint8Array }

type SocketEvents = {
  open: () => void
  message: (message: Message) => void
  close: (code: number, reason: string) => void
  /** The relay answered the upgrade with an HTTP status instead of 101. */
  refused: (status: number, body: string) => void
}

export type RawSocket = {
  /** `written` runs once the data has left this process's buffers (where the platform says). */
  send: (data: string | Uint8Array, written: () => void) => void
  /** Bytes accepted by send() and not yet written out. */
  buffered: () => number
  close: (code: number, reason: string) => void
  /** Stop and restart reading (Node only: browsers cannot). */
  pause: () => void
  resume: () => void
  /** End the connection without a close frame. */
  terminate: () => void
}

export type Connector = (url: string, token: string, events: SocketEvents) => RawSocket
