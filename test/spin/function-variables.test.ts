// A function's variables.toml, read from a tenant's source: the one line shape Spin's
// `[variables]` uses for a default, and a refusal naming the line for anything else, within
// bounds however the text is made.
import fc from 'fast-check'
import t from 'tap'
import {
  MAX_DECLARED_VARIABLES,
  MAX_DEFAULT_LENGTH,
  parseFunctionVariables,
} from '@session-relay/spin/function-variables'

t.test('declarations, comments and blank lines', async (t) => {
  t.same(
    parseFunctionVariables(
      '# what it reads\n\ngreeting = { default = "hello" }\n  api_url={default="https://x.test/\\u00e9"}  \r\n',
    ),
    { greeting: 'hello', api_url: 'https://x.test/é' },
  )
  t.same(parseFunctionVariables(''), {})
  t.same(parseFunctionVariables('empty = { default = "" }'), { empty: '' })
})

t.test('everything else is refused with its line', async (t) => {
  const refused: Array<[string, RegExp]> = [
    ['greeting = "hello"', /variables\.toml:1: not a line of the form name = \{ default = "text" \}/],
    ['\n[variables]', /variables\.toml:2: not a line/],
    ['greeting = { default = "a", secret = true }', /variables\.toml:1: not a line/],
    ['greeting = { default = "a" "b" }', /variables\.toml:1: the default is not one double-quoted string/],
    ['greeting = { default = "\\x41" }', /variables\.toml:1: the default is not one double-quoted string/],
    ['greeting = { default = 3 }', /not a line/],
    ["greeting = { default = 'single' }", /not a line/],
    ['Greeting = { default = "x" }', /"Greeting" is not a Spin variable name/],
    ['__proto__ = { default = "x" }', /"__proto__" is not a Spin variable name/],
    ['a__b = { default = "x" }', /is not a Spin variable name/],
    [`${'a'.repeat(65)} = { default = "x" }`, /is not a Spin variable name/],
    ['g = { default = "x" }\ng = { default = "y" }', /variables\.toml:2: g is declared twice/],
    [`g = { default = "${'x'.repeat(MAX_DEFAULT_LENGTH + 1)}" }`, /longer than 16384 characters/],
    [
      Array.from({ length: MAX_DECLARED_VARIABLES + 1 }, (_, i) => `v${i} = { default = "x" }`).join('\n'),
      /variables\.toml:101: more than 100 variables/,
    ],
  ]
  for (const [text, message] of refused) t.throws(() => parseFunctionVariables(text), message, text.slice(0, 60))
})

t.test('any text: declarations within the bounds, or an Error naming the line', async () => {
  const line = fc.oneof(
    fc.string({ maxLength: 80 }),
    fc
      .tuple(fc.stringMatching(/^[a-zA-Z_][a-z0-9_]{0,70}$/), fc.string({ maxLength: 40 }))
      .map(([name, value]) => `${name} = { default = ${JSON.stringify(value)} }`),
  )
  fc.assert(
    fc.property(fc.array(line, { maxLength: 30 }), (lines) => {
      let declared: Record<string, string>
      try {
        declared = parseFunctionVariables(lines.join('\n'))
      } catch (error) {
        return error instanceof Error && /^variables\.toml:\d+: /.test(error.message) && error.message.length < 300
      }
      const names = Object.keys(declared)
      return (
        names.length <= MAX_DECLARED_VARIABLES &&
        names.every((name) => /^[a-z][a-z0-9_]*$/.test(name) && name.length <= 64 && !name.includes('__')) &&
        Object.values(declared).every((value) => typeof value === 'string' && value.length <= MAX_DEFAULT_LENGTH)
      )
    }),
    { numRuns: 2000 },
  )
})

t.test('every declaration written the way the templates write it reads back', async () => {
  const name = fc
    .stringMatching(/^[a-z][a-z0-9_]{0,20}$/)
    .filter((candidate) => !candidate.endsWith('_') && !candidate.includes('__'))
  fc.assert(
    fc.property(fc.dictionary(name, fc.string({ maxLength: 60 }), { maxKeys: 20 }), (vars) => {
      const text = Object.entries(vars)
        .map(([n, v]) => `${n} = { default = ${JSON.stringify(v)} }`)
        .join('\n')
      const read = parseFunctionVariables(text)
      return JSON.stringify(Object.entries(read).sort()) === JSON.stringify(Object.entries(vars).sort())
    }),
  )
})
