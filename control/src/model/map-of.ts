import { Type } from 'typebox'
import type { TSchema, TUnsafe } from 'typebox'

/**
 * An object whose every value matches `value`. Not Type.Record: its key pattern `^.*$` does not
 * match keys with a line break, and a value under such a key would go unchecked.
 */
export function mapOf<T>(
  value: TSchema,
  description: string,
  limits: { maxProperties?: number } = {},
): TUnsafe<Record<string, T>> {
  return Type.Unsafe<Record<string, T>>({ type: 'object', additionalProperties: value, description, ...limits })
}
