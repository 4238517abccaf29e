// An application's memoryLimit as the worker applies it on this machine: to each instance (one
// per request), its memories together, rather than to a pod. A 32-bit memory cannot grow past
// 4 GiB, the worker's largest slot (--max-memory-bytes), so a larger limit is that.
import { parseQuantity } from '../model/quantity.js'

const MAX_INSTANCE_MEMORY_BYTES = 4 * 2 ** 30

/** The bytes an instance may grow to under `memoryLimit` (a Kubernetes quantity); undefined, the worker's default, when there is none. */
export function instanceMemoryBytes(memoryLimit: string | undefined): number | undefined {
  if (memoryLimit === undefined) return undefined
  const value = parseQuantity(memoryLimit)
  if (value === null) return undefined
  // Whole bytes, rounded up: 0.5 (half a byte) is one.
  const bytes = (value.numerator + value.denominator - 1n) / value.denominator
  return bytes > BigInt(MAX_INSTANCE_MEMORY_BYTES) ? MAX_INSTANCE_MEMORY_BYTES : Number(bytes)
}
