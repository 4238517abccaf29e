// WebSocket framing for the load generator, kept to what a benchmark client needs: binary
// frames built once and sent in batches, and a parser that reads frames by length only.
//
// Every payload starts with a 16-byte prefix: a u32 sequence number (LE), 4 spare bytes and
// a float64 send time in milliseconds (performance.now(), 0 when not timed), so receivers check order and count and
// measure one-way latency without looking at the rest.
import { createHash } from 'node:crypto'
import { connect } from 'node:net'
import type { Socket } from 'node:net'

export const PREFIX_BYTES = 16
const OPCODE_BINARY = 0x2
const OPCODE_CLOSE = 0x8

/**
 * The header of a client frame: FIN, binary, masked with an all-zero key. A zero key is a
 * valid mask (RFC 6455 §5.3 only asks for one), so a payload can be written as it is and
 * still pass every server's unmasking.
 */
export function clientFrameHeader(payloadLength: number, opcode = OPCODE_BINARY): Buffer {
  const extended = payloadLength < 126 ? 0 : payloadLength < 65536 ? 2 : 8
  const header = Buffer.alloc(2 + extended + 4)
  header[0] = 0x80 | opcode
  if (extended === 0) {
    header[1] = 0x80 | payloadLength
  } else if (extended === 2) {
    header[1] = 0x80 | 126
    header.writeUInt16BE(payloadLength, 2)
  } else {
    header[1] = 0x80 | 127
    header.writeBigUInt64BE(BigInt(payloadLength), 2)
  }
  return header // the last four bytes, the mask key, stay zero
}

export function closeFrame(code: number): Buffer {
  const payload = Buffer.alloc(2)
  payload.writeUInt16BE(code)
  return Buffer.concat([clientFrameHeader(2, OPCODE_CLOSE), payload])
}

export type FrameHandler = (seq: number, sentAt: number, length: number) => void

/**
 * Feed it every chunk a socket reads; it calls `onFrame` once per complete data frame with
 * the prefix decoded. Frames from the relay are unmasked; the raw TCP baseline passes the
 * clients' masked frames through, so a mask (always zero here) is skipped too.
 */
export function createFrameParser(onFrame: FrameHandler, onClose: (code: number) => void): (chunk: Buffer) => void {
  const header = Buffer.alloc(14)
  let headerHave = 0
  const prefix = Buffer.alloc(PREFIX_BYTES)
  let prefixHave = 0
  let inPayload = false
  let remaining = 0
  let length = 0
  let opcode = 0

  function headerLength(b1: number): number {
    const len = b1 & 0x7f
    return 2 + (len === 126 ? 2 : len === 127 ? 8 : 0) + ((b1 & 0x80) !== 0 ? 4 : 0)
  }

  function payloadLength(buf: Buffer, at: number): number {
    const len = buf[at + 1]! & 0x7f
    if (len === 126) return buf.readUInt16BE(at + 2)
    if (len === 127) return Number(buf.readBigUInt64BE(at + 2))
    return len
  }

  function startPayload(len: number, op: number): void {
    length = len
    remaining = len
    opcode = op
    prefixHave = 0
    inPayload = true
    if (len === 0) finish()
  }

  function finish(): void {
    inPayload = false
    if (opcode === OPCODE_CLOSE) return onClose(length >= 2 ? prefix.readUInt16BE(0) : 1005)
    if (opcode === 0x9 || opcode === 0xa) return // ping/pong: not counted
    if (length < PREFIX_BYTES) return onFrame(-1, 0, length)
    onFrame(prefix.readUInt32LE(0), prefix.readDoubleLE(8), length)
  }

  return (chunk: Buffer): void => {
    const n = chunk.length
    let i = 0
    while (i < n) {
      if (!inPayload) {
        if (headerHave === 0 && n - i >= 2) {
          const need = headerLength(chunk[i + 1]!)
          if (n - i >= need) {
            const op = chunk[i]! & 0x0f
            const len = payloadLength(chunk, i)
            i += need
            // The whole prefix is in this chunk: decode it without copying.
            if (len >= PREFIX_BYTES && n - i >= len && op === OPCODE_BINARY) {
              onFrame(chunk.readUInt32LE(i), chunk.readDoubleLE(i + 8), len)
              i += len
              continue
            }
            startPayload(len, op)
            continue
          }
        }
        header[headerHave++] = chunk[i++]!
        if (headerHave >= 2 && headerHave === headerLength(header[1]!)) {
          headerHave = 0
          startPayload(payloadLength(header, 0), header[0]! & 0x0f)
        }
        continue
      }
      const take = Math.min(remaining, n - i)
      const wanted = Math.min(PREFIX_BYTES - prefixHave, take)
      if (wanted > 0) {
        chunk.copy(prefix, prefixHave, i, i + wanted)
        prefixHave += wanted
      }
      remaining -= take
      i += take
      if (remaining === 0) finish()
    }
  }
}

// Every socket reads into this one buffer: each read is handled before the next, so sharing
// is safe, and the generator allocates nothing per read.
const readBuffer = Buffer.alloc(4 * 2 ** 20)

/**
 * Open a TCP connection and do the WebSocket handshake by hand; resolves with the raw
 * socket once upgraded. Everything read after the handshake goes to `onData`.
 */
export function rawWebSocket(
  host: string,
  port: number,
  path: string,
  token: string,
  onData: (chunk: Buffer) => void,
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const key = Buffer.from(Array.from({ length: 16 }, (_, i) => i * 7)).toString('base64')
    let head: Buffer | null = Buffer.alloc(0)
    const socket = connect({
      host,
      port,
      noDelay: true,
      onread: {
        buffer: readBuffer,
        callback: (nread: number, buffer: Uint8Array): boolean => {
          const chunk = Buffer.from(buffer.buffer, buffer.byteOffset, nread)
          if (head === null) {
            onData(chunk)
            return true
          }
          head = Buffer.concat([head, chunk])
          const end = head.indexOf('\r\n\r\n')
          if (end === -1) return true
          const status = head.subarray(0, head.indexOf('\r\n')).toString()
          const rest = head.subarray(end + 4)
          head = null
          socket.off('error', reject)
          if (!status.startsWith('HTTP/1.1 101')) {
            socket.destroy()
            reject(new Error(`upgrade refused: ${status}`))
            return false
          }
          resolve(socket)
          if (rest.length > 0) onData(rest)
          return true
        },
      },
    })
    socket.once('error', reject)
    socket.once('connect', () => {
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer ${token}\r\n\r\n`,
      )
    })
  })
}

export function acceptKey(key: string): string {
  return createHash('sha1')
    .update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11')
    .digest('base64')
}
