// The fuzz stage's knobs: a fixed seed and a small run count in `npm test`, so CI is bounded
// and repeatable; `npm run test:fuzz` (or FUZZ_RUNS / FUZZ_SEED) runs longer or elsewhere.
// A failing run prints its seed and path, which fast-check replays exactly.
import fc from 'fast-check'

const DEFAULT_SEED = 20261123
const DEFAULT_RUNS = 40

function fromEnv(name: string, fallback: number): number {
  const text = process.env[name]
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  if (!Number.isSafeInteger(value)) throw new Error(`${name} must be an integer, not ${JSON.stringify(text)}`)
  return value
}

/** Options for fc.assert: the stage's seed and `scale` times its run count. */
export function fuzzOptions(scale = 1): { seed: number; numRuns: number; endOnFailure: true } {
  return {
    seed: fromEnv('FUZZ_SEED', DEFAULT_SEED),
    numRuns: Math.max(1, Math.round(fromEnv('FUZZ_RUNS', DEFAULT_RUNS) * scale)),
    endOnFailure: true,
  }
}

/** Strings drawn mostly from `pieces`: the tokens that matter to a parser, glued at random. */
export function glued(pieces: string[], maxLength = 12): fc.Arbitrary<string> {
  return fc
    .array(
      fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...pieces) },
        { weight: 1, arbitrary: fc.string({ maxLength: 4 }) },
      ),
      { maxLength },
    )
    .map((parts) => parts.join(''))
}

/** Bytes a header value may be made of, and the ones it may not. */
export const headerValue = fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  { weight: 1, arbitrary: glued(['\r\n', '\n', '\0', '\x7f', ' ', '\t', ',', ';', '=', '"', 'é', '\u2028', 'x'], 8) },
)

/** Header names, valid and not. */
export const headerName = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      'content-type',
      'content-length',
      'transfer-encoding',
      'connection',
      'upgrade',
      'host',
      'authorization',
      'origin',
      'sec-websocket-key',
      'sec-websocket-version',
      'sec-websocket-protocol',
      'x-forwarded-for',
      'expect',
      'te',
    ),
  },
  { weight: 3, arbitrary: fc.stringMatching(/^[!#$%&'*+.^_`|~0-9a-zA-Z-]{1,20}$/) },
  { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 12 }) },
)
