// What the forwarder's choices and the backlog limits count a message at, with the
// measurements behind each figure.

/**
 * Messages at least this big go straight from the received buffer to the peer when nothing
 * is queued for it. Smaller ones are copied and written once per event-loop turn, because
 * one syscall per small message costs more than the copy (uWS 20.30 does not cork the other
 * socket from inside a message handler).
 */
export const DIRECT_SEND_MIN_BYTES = 4096

/**
 * What a held message costs beyond its payload, in bytes of RSS: its record, the Uint8Array and
 * ArrayBuffer of its copy, and its place in the slot's array. Measured on Node 20.20 (a million
 * messages held as hold() holds them, after GC): 284 B for an empty message, 300-310 B up to 64
 * bytes (copies V8 keeps on its heap), 445-456 B from 65 bytes on (a backing store of their own).
 * One figure, the largest: it is a memory bound, and a figure per size would tie it to V8's
 * thresholds. Counted by payload alone, 3 million empty messages took 750 MiB unseen.
 */
export const HELD_MESSAGE_OVERHEAD = 460

/**
 * The same for a message in the arena, whose payload the arena holds: its (offset, length,
 * isBinary) triple, 25-31 B measured the same way.
 */
export const QUEUED_MESSAGE_OVERHEAD = 32
