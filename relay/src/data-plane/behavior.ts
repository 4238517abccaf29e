// The WebSocket behavior of /relay/{id}: uWS's settings for it, the attach (upgrade.ts), and
// what each connection event does to the session table and the forwarder.
import type { WebSocketBehavior } from '../http/uws.js'
import type { PeerData, Slot } from '../session/session.js'
import { CLOSE_CODES } from './close-codes.js'
import type { DataPlaneDeps } from './deps.js'
import { attachUpgrade } from './upgrade.js'

/** What uWS 20.30 reports when it closes a connection for a message above maxPayloadLength. */
const TOO_BIG_MESSAGE = 'Received too big message'
/** Close both sides if a peer answers no ping for this long; uWS pings automatically. */
const IDLE_TIMEOUT_SECONDS = 120

export function dataPlaneBehavior(deps: DataPlaneDeps): WebSocketBehavior<PeerData> {
  const { table, forwarder, metrics, logger } = deps
  const maxPayloadLength = deps.maxFrameSize === -1 ? deps.maxBacklog : deps.maxFrameSize
  return {
    compression: 0, // uWS.DISABLED: a relay of opaque payloads gains nothing from it
    maxPayloadLength,
    // uWS drops sends past this, the close frame too. The relay closes the session once a
    // backlog passes maxBacklog, by at most one message, so this much always leaves room for
    // the 4003 frame: a slow receiver that reads again gets it after the data queued before
    // it, instead of a bare 1006.
    maxBackpressure: deps.maxBacklog + maxPayloadLength,
    closeOnBackpressureLimit: false, // the relay closes a slow session itself, with 4003
    idleTimeout: IDLE_TIMEOUT_SECONDS,
    sendPingsAutomatically: true,

    upgrade: attachUpgrade(deps),

    open(ws): void {
      const slot = ws.getUserData().slot
      table.attach(slot, ws)
      forwarder.deliverHeld(slot)
    },

    message(ws, message, isBinary): void {
      const data = ws.getUserData()
      if (!data.ended) forwarder.forward(data.slot, message, isBinary)
    },

    // uWS has queued the pong by now; see pinged() in backlog-limits.ts for why it counts.
    ping(ws): void {
      forwarder.pinged(ws)
    },

    drain(ws): void {
      const data = ws.getUserData()
      if (data.ended) table.closingDrained(ws)
      else forwarder.drained(data.slot)
    },

    close(ws, code, message): void {
      const data = ws.getUserData()
      if (data.ended) {
        table.closingGone(ws) // the relay closed it and has accounted for the rest
        return
      }
      data.ended = true
      const slot: Slot = data.slot
      table.releasePeer(slot)
      if (code === CLOSE_CODES.abnormal.code) {
        const reason = Buffer.from(message).toString()
        if (reason === TOO_BIG_MESSAGE) {
          metrics.framesTooBig++
          logger.info(
            { session: slot.session.id, slot: slot.name, limit: deps.maxFrameSize },
            'message above the frame size limit',
          )
        }
        table.dropped(slot, reason === '' ? 'connection lost' : reason)
        return
      }
      // A close frame is a deliberate end: the counterpart gets the same code and reason,
      // after the messages sent before it in the same turn.
      forwarder.flushNow(slot.other)
      table.close(slot.session, {
        reason: 'peer_closed',
        frame: { code, message: new Uint8Array(message).slice() },
        remove: false,
      })
    },
  }
}
