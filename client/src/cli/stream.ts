// The byte stream between two `relay attach` processes. The relay cannot slow a sender down
// (it closes the session with 4003 instead, docs/relay.md "Backpressure"), so the receiver
// acknowledges what it has written to stdout and the sender keeps at most WINDOW bytes
// unacknowledged: a slow stdout slows the sender and memory stays bounded on both ends. The
// receiver stops reading the connection while stdout is not drained (the connection then
// pauses its socket), and a peer that sends past the window anyway is closed with
// WINDOW_OVERRUN: its bytes are never buffered beyond it.
// Offsets make a drop repairable: after a reattach each side asks for what it has not seen.
//
//   binary frame: 8-byte big-endian offset of the first payload byte, then the payload
//   text frame:   {"ack": n}     n bytes of your stream are written out here
//                 {"eof": n}     my stream ended after n bytes
//                 {"resend": n}  I have your stream up to n; send again from there
import type { Connection } from '../connection.js'
import type { Io } from './context.js'

const WINDOW = 4 * 1024 * 1024
const HEADER = 8
/** Our close code for a peer that ignored the window (4000-4003 are the relay's). */
export const WINDOW_OVERRUN = 4010

type StreamResult = { sent: number; received: number; complete: boolean; overrun: boolean }

export type StreamControl = {
  /** Call after a reattach: both sides ask for what a drop may have lost. */
  reattached: () => void
  done: Promise<StreamResult>
}

/** Resolves when `stdout` drained, or can no longer (closed or failed: the command reports that). */
export function drained(stdout: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stdout.off('drain', done)
      stdout.off('close', done)
      stdout.off('error', done)
      resolve()
    }
    stdout.on('drain', done)
    stdout.on('close', done)
    stdout.on('error', done)
  })
}

export function pipeStream(
  connection: Connection,
  io: Io,
  onProgress: (sent: number, received: number) => void,
): StreamControl {
  const stdinIsTty = io.stdin.isTTY === true
  // sending
  let sent = 0
  let acked = 0
  let unacked: Array<{ offset: number; frame: Buffer }> = []
  let stdinEnded = false
  let eofSent = false
  let waitingForAck = false
  let chain: Promise<void> = Promise.resolve()
  // receiving
  let received = 0
  let written = 0
  let ackedBack = 0
  let ackScheduled = false
  let peerEof: number | null = null
  let resendAsked = -1
  let closing = false
  let overrun = false

  const control = (message: Record<string, number>) => {
    connection.send(JSON.stringify(message)).catch(() => {})
  }
  const enqueue = (step: () => Promise<void>) => {
    chain = chain.then(step).catch(() => {})
  }

  function checkDone() {
    const doneSending = (eofSent && acked >= sent) || (stdinIsTty && peerEof !== null)
    const doneReceiving = peerEof !== null && written >= peerEof
    if (doneSending && doneReceiving && !closing) {
      closing = true
      // the peer counts its stream delivered by our last ack: it must go before the close
      if (written > ackedBack) {
        ackedBack = written
        control({ ack: written })
      }
      void connection.close(1000, 'done')
    }
  }

  io.stdin.on('data', (chunk: Buffer) => {
    io.stdin.pause()
    enqueue(async () => {
      const frame = Buffer.allocUnsafe(HEADER + chunk.length)
      frame.writeBigUInt64BE(BigInt(sent), 0)
      chunk.copy(frame, HEADER)
      unacked.push({ offset: sent, frame })
      sent += chunk.length
      onProgress(sent, written)
      await connection.send(frame)
      if (sent - acked < WINDOW) io.stdin.resume()
      else waitingForAck = true
    })
  })
  io.stdin.on('end', () => {
    stdinEnded = true
    enqueue(async () => {
      eofSent = true
      await connection.send(JSON.stringify({ eof: sent }))
      checkDone()
    })
  })

  function onAck(n: number) {
    if (n <= acked) return
    acked = n
    unacked = unacked.filter((c) => c.offset + c.frame.length - HEADER > acked)
    if (waitingForAck && sent - acked < WINDOW) {
      waitingForAck = false
      io.stdin.resume()
    }
    checkDone()
  }

  function onResend(from: number) {
    const again = unacked.filter((c) => c.offset + c.frame.length - HEADER > from)
    enqueue(async () => {
      for (const c of again) await connection.send(c.frame)
    })
    if (eofSent)
      enqueue(async () => {
        await connection.send(JSON.stringify({ eof: sent }))
      })
  }

  function ackSoon() {
    if (ackScheduled) return
    ackScheduled = true
    setImmediate(() => {
      ackScheduled = false
      if (written > ackedBack) {
        ackedBack = written
        control({ ack: written })
      }
      checkDone()
    })
  }

  /** Writes what is new in `frame`; false when stdout wants a drain before the next. */
  function onData(frame: Uint8Array): boolean {
    if (frame.byteLength < HEADER) return true
    const bytes = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength)
    const offset = Number(bytes.readBigUInt64BE(0))
    const payload = bytes.subarray(HEADER)
    const end = offset + payload.length
    if (end <= received) return true // a duplicate, resent after a drop
    if (offset > received) {
      // a gap: a drop lost frames; ask once for everything from here
      if (resendAsked !== received) {
        resendAsked = received
        control({ resend: received })
      }
      return true
    }
    const part = payload.subarray(received - offset)
    // The sender may have WINDOW bytes past our last ack in flight, and the frame that crosses
    // it (a stdin chunk: never as large as the window).
    if (payload.length > WINDOW || end - ackedBack > WINDOW + payload.length) {
      overrun = true
      closing = true
      void connection.close(WINDOW_OVERRUN, 'sent past the window')
      return true
    }
    received = end
    return io.stdout.write(part, () => {
      written += part.length
      onProgress(sent, written)
      ackSoon()
    })
  }

  const done = (async (): Promise<StreamResult> => {
    for await (const message of connection) {
      if (message.type === 'binary') {
        if (!onData(message.data)) await drained(io.stdout)
        continue
      }
      let parsed: { ack?: unknown; eof?: unknown; resend?: unknown }
      try {
        parsed = JSON.parse(message.data) as typeof parsed
      } catch {
        continue
      }
      if (typeof parsed.ack === 'number') onAck(parsed.ack)
      if (typeof parsed.eof === 'number') {
        peerEof = parsed.eof
        checkDone()
      }
      if (typeof parsed.resend === 'number') onResend(parsed.resend)
    }
    // A normal close: ours once both streams were done, or the peer's once it had ours.
    if (overrun) return { sent, received: written, complete: false, overrun }
    await new Promise<void>((resolve) => io.stdout.write('', () => resolve()))
    // Complete: all we read was acknowledged, and the stream was over (stdin ended, or an
    // interactive or silent side); a peer that closes in the middle of our stream cut it.
    const sendingOver = stdinEnded || stdinIsTty || sent === 0
    const complete = acked >= sent && sendingOver && (peerEof === null || written >= peerEof)
    return { sent, received: written, complete, overrun }
  })()

  return {
    reattached: () => {
      control({ ack: written })
      control({ resend: received })
    },
    done,
  }
}
