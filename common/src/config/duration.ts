// Durations use Go's time.ParseDuration syntax so operators can reuse the
// values they already write for other (Go) services in the same deployment.

// A Map, not an object literal, so units like 'constructor' are unknown
// instead of finding Object.prototype members.
const nanosPerUnit = new Map<string, bigint>([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n], // micro sign
  ['\u03bcs', 1_000n], // Greek small letter mu
  ['ms', 1_000_000n],
  ['s', 1_000_000_000n],
  ['m', 60_000_000_000n],
  ['h', 3_600_000_000_000n],
])

// Go stores durations as int64 nanoseconds and rejects anything larger.
const maxNanos = (1n << 63n) - 1n

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9'

// Returns milliseconds. Integer arithmetic on nanoseconds (like Go) keeps
// '1.1s' exactly 1100 ms instead of accumulating float error per term.
export function parseDuration(text: string): number {
  const invalid = (): Error => new Error(`invalid duration ${JSON.stringify(text)}`)
  let s = text
  let negative = false
  if (s.startsWith('-') || s.startsWith('+')) {
    negative = s.startsWith('-')
    s = s.slice(1)
  }
  if (s === '0') return 0
  if (s === '') throw invalid()

  let total = 0n
  let i = 0
  while (i < s.length) {
    const intStart = i
    while (isDigit(s[i])) i++
    const intDigits = s.slice(intStart, i)
    let fracDigits = ''
    if (s[i] === '.') {
      i++
      const fracStart = i
      while (isDigit(s[i])) i++
      fracDigits = s.slice(fracStart, i)
    }
    // Go accepts '1.h' and '.5h' but not '.h'. More than 20 integer digits
    // overflows int64 nanoseconds anyway, so refuse before building a BigInt.
    if (intDigits === '' && fracDigits === '') throw invalid()
    if (intDigits.length > 20) throw invalid()
    // Digits past 30 are far below a nanosecond even for hours.
    fracDigits = fracDigits.slice(0, 30)

    const unitStart = i
    while (i < s.length && s[i] !== '.' && !isDigit(s[i])) i++
    const unit = nanosPerUnit.get(s.slice(unitStart, i))
    if (unit === undefined) throw invalid()

    total += BigInt(intDigits || '0') * unit
    if (fracDigits !== '') {
      // Truncates below a nanosecond, as Go does.
      total += (BigInt(fracDigits) * unit) / 10n ** BigInt(fracDigits.length)
    }
    if (total > maxNanos + (negative ? 1n : 0n)) throw invalid()
  }
  const ms = Number(total) / 1e6
  return negative ? -ms : ms
}

// Go's Duration.String layout ('2h0m0s', '1.5s', '300ms', '1.5µs'), so log
// lines read the same as the configuration syntax.
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return `${ms}ms`
  const nanos = Math.round(Math.abs(ms) * 1e6)
  if (nanos === 0) return '0s'
  const sign = ms < 0 ? '-' : ''
  if (nanos < 1e3) return `${sign}${nanos}ns`
  if (nanos < 1e6) return `${sign}${withFraction(nanos, 3)}\u00b5s`
  if (nanos < 1e9) return `${sign}${withFraction(nanos, 6)}ms`
  const seconds = withFraction(nanos % 60e9, 9)
  const minutes = Math.floor(nanos / 60e9)
  const hours = Math.floor(minutes / 60)
  if (hours > 0) return `${sign}${hours}h${minutes % 60}m${seconds}s`
  if (minutes > 0) return `${sign}${minutes}m${seconds}s`
  return `${sign}${seconds}s`
}

// Prints value / 10^digits without trailing fractional zeros.
function withFraction(value: number, digits: number): string {
  const scale = 10 ** digits
  const whole = Math.floor(value / scale)
  const fraction = String(value % scale)
    .padStart(digits, '0')
    .replace(/0+$/, '')
  return fraction === '' ? String(whole) : `${whole}.${fraction}`
}
