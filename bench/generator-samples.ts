// Latency samples, kept without allocating while measuring, and their quantiles.

export type Samples = ReturnType<typeof createSamples>

/** Latency samples in a preallocated array, so measuring allocates nothing; past capacity they are dropped. */
export function createSamples(capacity: number) {
  const values = new Float64Array(capacity)
  let n = 0
  return {
    add: (ms: number): void => {
      if (n < capacity) values[n++] = ms
    },
    count: (): number => n,
    reset: (): void => {
      n = 0
    },
    capacity,
    from: (start: number): Float64Array => values.slice(start, n),
  }
}

export function quantile(sorted: Float64Array, q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}
