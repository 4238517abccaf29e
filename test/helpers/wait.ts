// Waiting in tests: for a condition to hold, or for a promise within a deadline.

export function until(check: () => boolean | Promise<boolean>, timeoutMs = 5_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs
  return new Promise((resolve, reject) => {
    const poll = async (): Promise<void> => {
      if (await check()) return resolve()
      if (Date.now() > deadline) return reject(new Error(`timed out waiting for ${what}`))
      setTimeout(() => void poll(), 10)
    }
    void poll()
  })
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
