// What the sections' settings tables share: the row helper and the parsers more than one
// section uses. Beneath every section, like config.ts, so any of them may import it.
import type { Setting } from '@session-relay/common/config/settings'
import { parseTimerDuration } from '@session-relay/common/config/settings'

/** The row helper of the section `C`: only ties each parser's return type to its key. */
export const rowOf =
  <C>() =>
  <K extends keyof C>(row: Setting<C, K>): Setting<C, K> =>
    row

/** A parser of whole numbers from 1 to `max`. */
export function integerUpTo(max: number): (text: string) => number {
  return (text) => {
    const n = Number(text)
    if (!/^[0-9]+$/.test(text) || n < 1 || n > max) throw new Error(`expected an integer from 1 to ${max}`)
    return n
  }
}

/** A parser of whole numbers from 0 to `max`. */
export function integerFromZeroTo(max: number): (text: string) => number {
  return (text) => {
    const n = Number(text)
    if (!/^[0-9]+$/.test(text) || n > max) throw new Error(`expected an integer from 0 to ${max}`)
    return n
  }
}

// Jobs count in whole seconds.
export const parseSeconds = (text: string): number => Math.max(1, Math.round(parseTimerDuration(text) / 1000)) * 1000

export const withoutTrailingSlash = (text: string): string => text.replace(/\/+$/, '')
