// A peer's connection to its slot: send() with flow control, an async iterator of messages,
// close(), and reattach after a drop within the peer-wait window.
import { NORMAL_CLOSE, SHUTDOWN_CLOSE, describeClose } from './close-codes.js'
import type { CloseCodeInfo } from './close-codes.js'
import { RelayError, httpError } from './errors.js'
import type { Connector, Message, RawSocket } from './socket.js'

export type CloseInfo = CloseCodeInfo & {
  reason: string
  /** This side called close(). */
  byUs: boolean
}

export type ConnectionEvent =
  | { type: 'drop' }
  /** The relay is shutting down (1001): `recreate` is creating the session again elsewhere. */
  | { type: 'recreate' }
  | { type: 'reattached'; attempts: number }

/** Where the session goes on: an attach URL and the slot token for it. */
export type Recreated = { url: string; token: string }

export type AttachOptions = {
  /**
   * How long after a drop to keep trying to reattach; match the relay's --peer-wait (2 min by
   * default). 0 turns reattach off.
   */
  reattachWindowMs?: number
  /** send() waits while more than this many bytes are not yet written out (default 1 MiB). */
  highWaterMark?: number
  /** Received bytes held for a reader that does not keep up before reading pauses (Node, default 4 MiB). */
  receiveHighWaterMark?: number
  /**
   * Called when the relay closes with 1001 (it is shutting down and its drain ran out): the
   * session is to be created again on another relay, and this returns where this side
   * attaches. The connection then attaches there as after a drop, within `reattachWindowMs`.
   * Both peers get the 1001, so the two callbacks must agree on the new session (the one that
   * creates it hands the other its token). Without it, 1001 ends the connection.
   */
  recreate?: () => Promise<Recreated>
  onEvent?: (event: ConnectionEvent) => void
}

export type Connection = {
  /** Resolves once the relay can take more; rejects with code `closed` once the connection is closed. */
  send: (data: string | Uint8Array) => Promise<void>
  /** Messages in order; ends after a normal close, throws a `closed` RelayError (body: CloseInfo) otherwise. */
  [Symbol.asyncIterator]: () => AsyncIterator<Message>
  /** Closes the session for both peers (the relay forwards the code to the other one). */
  close: (code?: number, reason?: string) => Promise<CloseInfo>
  /** Resolves when the connection is over for good, with why. */
  closed: Promise<CloseInfo>
}

const BACKOFF_START_MS = 100
const BACKOFF_MAX_MS = 5000
const POLL_MS = 5

export function openConnection(
  connect: Connector,
  firstUrl: string,
  firstToken: string,
  opts: AttachOptions = {},
): Promise<Connection> {
  // Both change when the session is created again elsewhere (opts.recreate).
  let url = firstUrl
  let token = firstToken
  const window = opts.reattachWindowMs ?? 120_000
  const highWater = opts.highWaterMark ?? 1024 * 1024
  const receiveHighWater = opts.receiveHighWaterMark ?? 4 * 1024 * 1024

  let raw: RawSocket
  let up = false
  let closing = false
  let final: CloseInfo | null = null
  let resolveClosed!: (info: CloseInfo) => void
  const closed = new Promise<CloseInfo>((resolve) => {
    resolveClosed = resolve
  })
  // wakes whoever waits on state changes: writers waiting for room or for a reattach, readers
  let wake: Array<() => void> = []
  const notify = () => {
    const w = wake
    wake = []
    for (const f of w) f()
  }
  const changed = (pollMs?: number) =>
    new Promise<void>((resolve) => {
      wake.push(resolve)
      if (pollMs !== undefined) setTimeout(resolve, pollMs)
    })

  const inbox: Message[] = []
  let inboxBytes = 0
  let paused = false

  function finish(info: CloseInfo) {
    if (final !== null) return
    final = info
    up = false
    resolveClosed(info)
    notify()
  }

  return new Promise<Connection>((resolveAttach, rejectAttach) => {
    let attached = false

    function dial(onOpen: () => void, onRefused: (error: RelayError) => void, onLost: () => void) {
      let settled = false
      let refused = false
      raw = connect(url, token, {
        open: () => {
          settled = true
          onOpen()
        },
        refused: (status, body) => {
          settled = true
          refused = true
          onRefused(httpError('attach', status, body))
        },
        message: (message) => {
          inbox.push(message)
          inboxBytes += sizeOf(message)
          if (!paused && inboxBytes > receiveHighWater) {
            paused = true
            raw.pause()
          }
          notify()
        },
        close: (code, reason) => {
          if (refused) return // the refusal said it all
          if (!settled) {
            settled = true
            onLost()
            return
          }
          if (code === 1006 && !closing && window > 0 && final === null) {
            up = false
            opts.onEvent?.({ type: 'drop' })
            void reattach()
            return
          }
          if (code === SHUTDOWN_CLOSE && opts.recreate !== undefined && !closing && final === null) {
            up = false
            opts.onEvent?.({ type: 'recreate' })
            void recreateElsewhere(opts.recreate, reason)
            return
          }
          finish({ ...describeClose(code), reason, byUs: closing })
        },
      })
    }

    async function recreateElsewhere(recreate: () => Promise<Recreated>, reason: string) {
      try {
        ;({ url, token } = await recreate())
      } catch (error) {
        finish({
          ...describeClose(SHUTDOWN_CLOSE),
          reason: `${reason}; could not create the session again: ${(error as Error).message}`,
          byUs: false,
        })
        return
      }
      await reattach()
    }

    async function reattach() {
      const deadline = Date.now() + window
      let delay = BACKOFF_START_MS
      for (let attempt = 1; final === null; attempt++) {
        const left = deadline - Date.now()
        if (left <= 0) break
        await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left)))
        delay = Math.min(delay * 2, BACKOFF_MAX_MS)
        if (closing) break
        const outcome = await new Promise<'open' | 'retry' | RelayError>((resolve) => {
          dial(
            () => resolve('open'),
            (error) => resolve(error.code === 'conflict' ? 'retry' : error),
            () => resolve('retry'),
          )
        })
        if (outcome === 'open') {
          up = true
          paused = false
          if (inboxBytes > receiveHighWater) {
            paused = true
            raw.pause()
          }
          opts.onEvent?.({ type: 'reattached', attempts: attempt })
          notify()
          return
        }
        // 409 means the relay has not noticed the drop yet; 401/404 mean the session is gone.
        if (outcome !== 'retry') {
          finish({ ...describeClose(1006), reason: outcome.message, byUs: false })
          return
        }
      }
      finish({ ...describeClose(1006), reason: 'could not reattach within the peer-wait window', byUs: closing })
    }

    const connection: Connection = {
      send: async (data) => {
        for (;;) {
          if (final !== null || closing) throw closedError(final)
          if (up) break
          await changed()
        }
        raw.send(data, notify)
        while (raw.buffered() > highWater && final === null && up) await changed(POLL_MS)
      },
      [Symbol.asyncIterator]: () => ({
        next: async () => {
          for (;;) {
            const message = inbox.shift()
            if (message !== undefined) {
              inboxBytes -= sizeOf(message)
              if (paused && inboxBytes <= receiveHighWater / 2) {
                paused = false
                raw.resume()
              }
              return { done: false, value: message }
            }
            if (final !== null) {
              if (final.code === NORMAL_CLOSE || final.byUs) return { done: true, value: undefined }
              throw closedError(final)
            }
            await changed()
          }
        },
      }),
      close: async (code = NORMAL_CLOSE, reason = '') => {
        if (final === null && !closing) {
          closing = true
          if (up) raw.close(code, reason)
          else finish({ ...describeClose(code), reason, byUs: true })
          notify()
        }
        return await closed
      },
      closed,
    }

    dial(
      () => {
        attached = true
        up = true
        resolveAttach(connection)
      },
      (error) => {
        if (!attached) rejectAttach(error)
      },
      () => rejectAttach(new RelayError('network', `cannot connect to ${url}`)),
    )
  })
}

function closedError(info: CloseInfo | null): RelayError {
  if (info === null) return new RelayError('closed', 'the connection is closing')
  const reason = info.reason === '' ? '' : `: ${info.reason}`
  return new RelayError('closed', `connection closed ${info.code} ${info.name} (${info.meaning})${reason}`, {
    body: info,
  })
}

function sizeOf(message: Message): number {
  return message.type === 'binary' ? message.data.byteLength : message.data.length
}
