// The worker runs commands side by side; one application's must run in order (a load, then
// its idle; an unload after the load it undoes). A queue per key, dropped once empty.

export type KeyedQueue = {
  /** Runs `step` after the key's earlier steps have settled, whatever their outcome. */
  enqueue: (key: string, step: () => Promise<void>) => Promise<void>
}

export function createKeyedQueue(): KeyedQueue {
  const queues = new Map<string, Promise<void>>()
  return {
    enqueue(key, step) {
      const next = (queues.get(key) ?? Promise.resolve()).then(step, step)
      const settled = next.catch(() => {})
      queues.set(key, settled)
      void settled.then(() => {
        if (queues.get(key) === settled) queues.delete(key)
      })
      return next
    },
  }
}
