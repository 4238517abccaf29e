// Browsers: the platform WebSocket. It cannot set headers on the upgrade, so the slot token
// goes in the query string (relay.md §4: `?token=`); it cannot pause reading, and it says
// nothing about a refused upgrade but that the connection failed.
import type { Connector } from './socket.js'

type PlatformSocket = {
  binaryType: string
  bufferedAmount: number
  readyState: number
  send: (data: string | Uint8Array) => void
  close: (code?: number, reason?: string) => void
  onopen: (() => void) | null
  onmessage: ((event: { data: unknown }) => void) | null
  onclose: ((event: { code: number; reason: string }) => void) | null
  onerror: (() => void) | null
}

type PlatformWebSocket = new (url: string) => PlatformSocket

export const browserConnector: Connector = (url, token, events) => {
  const Platform = (globalThis as unknown as { WebSocket: PlatformWebSocket }).WebSocket
  const target = new URL(url)
  target.searchParams.set('token', token)
  const socket = new Platform(target.href)
  socket.binaryType = 'arraybuffer'
  let opened = false
  socket.onopen = () => {
    opened = true
    events.open()
  }
  socket.onmessage = (event) => {
    events.message(
      typeof event.data === 'string'
        ? { type: 'text', data: event.data }
        : { type: 'binary', data: new Uint8Array(event.data as ArrayBuffer) },
    )
  }
  socket.onclose = (event) => {
    if (!opened)
      events.refused(
        0,
        'the browser does not tell why the upgrade failed (bad token, unknown session, slot taken or no connection)',
      )
    else events.close(event.code, event.reason)
  }
  return {
    // The platform says only how much is still buffered: the connection polls buffered().
    send: (data) => socket.send(data),
    buffered: () => socket.bufferedAmount,
    close: (code, reason) => socket.close(code, reason),
    pause: () => {},
    resume: () => {},
    terminate: () => socket.close(),
  }
}
