// One series on disk: a file of fixed size holding a ring of per-step records, each a step
// number and a few unsigned 32-bit fields. A step's record sits at (step mod slots), so the file
// never grows and what is older than the ring is overwritten by the steps that come after it;
// a record whose step number is not the one asked for is an old lap and reads as absent. Nothing
// is ever written for a step with nothing to say: the file is created sparse, and a series that
// is quiet costs no disk beyond its header. Read and written with a positioned read or write of
// a few records at a time, the file opened for each: many series, few descriptors held.
import { closeSync, fstatSync, openSync, readSync, writeSync } from 'node:fs'
import { ftruncateSync } from 'node:fs'

const MAGIC = 0x314d_4b57 // "WKM1", little-endian
const HEADER_BYTES = 16
const MAX_U32 = 0xffff_ffff

export type RingFile = {
  /**
   * Changes the record of `step`: `change` gets its fields (zeros when the step has none yet)
   * and edits them in place.
   */
  update(step: number, change: (fields: Uint32Array) => void): void
  /** The records of steps `from` to `to` (inclusive), null where a step has none. */
  read(from: number, to: number): Array<Uint32Array | null>
  readonly slots: number
  readonly fields: number
}

/** Adds without wrapping: a counter that overflows a step stays at the largest value. */
export function saturatingAdd(a: number, b: number): number {
  return Math.min(MAX_U32, a + Math.max(0, Math.round(b)))
}

/**
 * Opens the series at `path`, creating it, or creating it anew when it was made with another
 * shape (another retention or resolution): its old records could not be placed in the new ring.
 */
export function openRingFile(path: string, slots: number, fields: number): RingFile {
  const recordBytes = 4 * (fields + 1)
  const size = HEADER_BYTES + slots * recordBytes
  const header = new Uint32Array([MAGIC, 1, slots, fields])

  const withFd = <T>(flags: string, use: (fd: number) => T): T => {
    const fd = openSync(path, flags, 0o600)
    try {
      return use(fd)
    } finally {
      closeSync(fd)
    }
  }
  const matches = (fd: number): boolean => {
    if (fstatSync(fd).size !== size) return false
    const found = new Uint32Array(4)
    readSync(fd, found, 0, HEADER_BYTES, 0)
    return found.every((value, i) => value === header[i])
  }
  withFd('a+', (fd) => {
    if (matches(fd)) return
    // Truncated to nothing first: no record of another shape survives into the new ring.
    ftruncateSync(fd, 0)
    ftruncateSync(fd, size)
  })
  withFd('r+', (fd) => {
    if (!matches(fd)) writeSync(fd, header, 0, HEADER_BYTES, 0)
  })

  const offsetOf = (step: number): number => HEADER_BYTES + (step % slots) * recordBytes

  return {
    slots,
    fields,
    update(step, change) {
      withFd('r+', (fd) => {
        const record = new Uint32Array(fields + 1)
        readSync(fd, record, 0, recordBytes, offsetOf(step))
        // Stored as step + 1: zero is a record never written (a hole of the sparse file).
        if (record[0] !== step + 1) record.fill(0)
        record[0] = step + 1
        change(record.subarray(1))
        writeSync(fd, record, 0, recordBytes, offsetOf(step))
      })
    },
    read(from, to) {
      const count = to - from + 1
      if (count <= 0) return []
      // Past a whole lap every step would be read twice; the older ones cannot be there anyway.
      const first = Math.max(from, to - slots + 1)
      const records = new Uint32Array((to - first + 1) * (fields + 1))
      withFd('r', (fd) => {
        let done = 0
        while (done < to - first + 1) {
          const position = (first + done) % slots
          const run = Math.min(slots - position, to - first + 1 - done)
          readSync(fd, records, done * recordBytes, run * recordBytes, HEADER_BYTES + position * recordBytes)
          done += run
        }
      })
      const out: Array<Uint32Array | null> = new Array<Uint32Array | null>(count).fill(null)
      for (let step = first; step <= to; step++) {
        const record = records.subarray((step - first) * (fields + 1), (step - first + 1) * (fields + 1))
        if (record[0] === step + 1) out[step - from] = record.subarray(1)
      }
      return out
    },
  }
}
