// What should run changed for an application (a build succeeded): told to whoever follows
// (the reconcile), which the runtimes that report builds are started before. Nothing follows
// yet at the start: the start's resync (domain/reconcile.ts) applies what changed meanwhile.
export type DesiredChanges = {
  /** Resolves when the follower has acted on it (a build's end is reported once that is done). */
  changed(appId: string): Promise<void>
  follow(listener: (appId: string) => Promise<unknown>): void
}

export function desiredChanges(): DesiredChanges {
  let listener: ((appId: string) => Promise<unknown>) | null = null
  return {
    async changed(appId) {
      await listener?.(appId)
    },
    follow(next) {
      listener = next
    },
  }
}
