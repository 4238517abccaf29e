// Kubernetes resource quantities (apimachinery's resource.Quantity), the subset a CPU or memory
// setting needs: a positive decimal number with an optional SI, binary or exponent suffix. The
// full grammar also takes signs, "1." and ".5" forms, and the n and u suffixes; refusing those
// keeps every accepted text one the API server accepts (it may write it back canonical:
// 0.5 as 500m). Values are
// kept exact (a fraction of two BigInts) so that comparing "500m" with "0.5" or "1Gi" with
// "1073741824" is never off by a rounding.

const QUANTITY = /^(?<whole>[0-9]+)(?:\.(?<fraction>[0-9]+))?(?<suffix>[KMGTPE]i|[mkMGTPE]|[eE][+-]?[0-9]{1,2})?$/

/** Longer quantities are refused before any parsing: nothing sensible needs more. */
const MAX_QUANTITY_LENGTH = 32

const DECIMAL_SI: Record<string, number> = { m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 }
const BINARY_SI: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 }

/** An exact positive value: numerator / denominator. */
export type QuantityValue = { numerator: bigint; denominator: bigint }

export const QUANTITY_RULE = `a positive Kubernetes quantity of at most ${MAX_QUANTITY_LENGTH} characters: digits with an optional fraction and suffix m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or e<exponent> (500m, 1.5, 256Mi, 2Gi)`

/** The value of a quantity, or null when the text is not one this parser accepts. */
export function parseQuantity(text: string): QuantityValue | null {
  if (text.length > MAX_QUANTITY_LENGTH) return null
  const match = QUANTITY.exec(text)
  if (match?.groups === undefined) return null
  const { whole = '', fraction = '', suffix = '' } = match.groups
  let numerator = BigInt(whole + fraction)
  let denominator = 10n ** BigInt(fraction.length)
  let exponent = 0
  if (suffix in BINARY_SI) numerator *= 2n ** BigInt(BINARY_SI[suffix] as number)
  else if (suffix in DECIMAL_SI) exponent = DECIMAL_SI[suffix] as number
  else if (suffix !== '') exponent = Number(suffix.slice(1))
  if (exponent >= 0) numerator *= 10n ** BigInt(exponent)
  else denominator *= 10n ** BigInt(-exponent)
  if (numerator === 0n) return null
  return { numerator, denominator }
}

/** Negative when a < b, 0 when equal, positive when a > b. */
export function compareQuantities(a: QuantityValue, b: QuantityValue): number {
  const left = a.numerator * b.denominator
  const right = b.numerator * a.denominator
  return left < right ? -1 : left > right ? 1 : 0
}
