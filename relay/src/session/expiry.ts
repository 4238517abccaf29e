// Expiry and reaping: one timer for the session at the head of the table (the next to expire,
// since every session gets the same TTL), and the periodic sweep that removes closed sessions.
import { CLOSE_CODES } from '../data-plane/close-codes.js'
import type { TableContext } from './context.js'
import { closeSession } from './transitions.js'

// setTimeout fires at once for delays past 2^31-1 ms; longer waits are re-armed.
const MAX_TIMER_MS = 2 ** 31 - 1

export type Expiry = {
  /** A session was created that expires at `at`: arm the timer if nothing earlier holds it. */
  created(at: number): void
  /** The periodic reap: closed sessions leave the table (expired ones left it when they expired). */
  sweep(): void
  stop(): void
}

export function startExpiry(ctx: TableContext, reapIntervalMs: number): Expiry {
  let expiryTimer: NodeJS.Timeout | null = null
  const reapTimer = setInterval(sweep, reapIntervalMs)
  reapTimer.unref()

  function arm(at: number): void {
    expiryTimer = setTimeout(expireDue, Math.min(Math.max(at - Date.now(), 0), MAX_TIMER_MS))
    expiryTimer.unref()
  }

  function expireDue(): void {
    expiryTimer = null
    const now = Date.now()
    for (const session of ctx.sessions.values()) {
      if (session.expiresAt > now) {
        arm(session.expiresAt)
        return
      }
      closeSession(ctx, session, { reason: 'expired', frame: CLOSE_CODES.expired, remove: true })
    }
  }

  function sweep(): void {
    const ids = ctx.closedIds.splice(0)
    for (const id of ids) ctx.sessions.delete(id)
    if (ids.length > 0) ctx.logger.info({ removed: ids.length }, 'swept closed sessions')
    expireDue()
  }

  function created(at: number): void {
    if (expiryTimer === null) arm(at)
  }

  function stop(): void {
    clearInterval(reapTimer)
    if (expiryTimer !== null) clearTimeout(expiryTimer)
    expiryTimer = null
  }

  return { created, sweep, stop }
}
