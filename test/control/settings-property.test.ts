// Property-based: everything the quantity and variable-name parsers accept is valid to
// Kubernetes (apimachinery's resource.Quantity grammar, written out here on its own) and to
// Spin (spin-expressions' rules for a variable key, also written out here), their values agree
// with @kubernetes/client-node's reading, and through the API everything else is a 400 naming
// the field. Fixed seed, bounded runs (test/helpers/fuzz.ts).
import { quantityToScalar } from '@kubernetes/client-node/dist/util.js'
import fc from 'fast-check'
import t from 'tap'
import { isVariableName, MAX_VARIABLE_NAME_LENGTH } from '@session-relay/control/model/app-settings'
import { compareQuantities, parseQuantity } from '@session-relay/control/model/quantity'
import { createApp, startTestControl } from '../helpers/control.js'
import { fuzzOptions, glued } from '../helpers/fuzz.js'

// apimachinery (pkg/api/resource/quantity.go):
//   <quantity> ::= <signedNumber><suffix>; <signedNumber> ::= <number> | <sign><number>
//   <number> ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//   <suffix> ::= <binarySI> | <decimalExponent> | <decimalSI>
//   <binarySI> ::= Ki | Mi | Gi | Ti | Pi | Ei;  <decimalSI> ::= n | u | m | "" | k | M | G | T | P | E
//   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>  (an integer in practice)
const KUBERNETES_QUANTITY =
  /^[+-]?([0-9]+|[0-9]+\.[0-9]+|[0-9]+\.|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$/

// spin-expressions' Key::new: non-empty; only a-z, 0-9 and "_"; a letter first; a letter or
// digit last; no "__".
function spinAccepts(key: string): boolean {
  if (key === '') return false
  if ([...key].some((c) => !/^[a-z0-9_]$/.test(c))) return false
  if (!/^[a-z]$/.test(key[0] as string)) return false
  if (!/^[a-z0-9]$/.test(key[key.length - 1] as string)) return false
  return !key.includes('__')
}

const SUFFIXES = ['', 'm', 'k', 'M', 'G', 'T', 'P', 'E', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei']
const quantityText = fc.oneof(
  {
    weight: 3,
    arbitrary: glued(
      [
        '0',
        '1',
        '5',
        '9',
        '.',
        '+',
        '-',
        'e',
        'E',
        'm',
        'k',
        'Ki',
        'ki',
        'Mi',
        'Gi',
        'M',
        'G',
        'n',
        'u',
        'i',
        ' ',
        'x',
      ],
      8,
    ),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.nat({ max: 100_000 }),
        fc.option(fc.nat({ max: 999 })),
        fc.constantFrom(...SUFFIXES, 'e3', 'E-2', 'e+1'),
      )
      .map(([whole, fraction, suffix]) => `${whole}${fraction === null ? '' : `.${fraction}`}${suffix}`),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
)

t.test('every quantity the parser accepts is one Kubernetes accepts', async () => {
  fc.assert(
    fc.property(quantityText, (text) => {
      if (parseQuantity(text) !== null && !KUBERNETES_QUANTITY.test(text))
        throw new Error(`accepted ${JSON.stringify(text)}, which Kubernetes refuses`)
    }),
    fuzzOptions(10),
  )
})

t.test('an accepted quantity has the value @kubernetes/client-node reads from it, and compares by value', async () => {
  const whole = fc.tuple(fc.integer({ min: 1, max: 1_000_000 }), fc.constantFrom(...SUFFIXES.filter((s) => s !== 'm')))
  fc.assert(
    fc.property(whole, ([n, suffix]) => {
      const parsed = parseQuantity(`${n}${suffix}`)
      if (parsed === null) throw new Error(`refused ${n}${suffix}`)
      const scalar = BigInt(quantityToScalar(`${n}${suffix}`))
      if (parsed.numerator !== scalar * parsed.denominator)
        throw new Error(`${n}${suffix}: ${parsed.numerator}/${parsed.denominator}, client-node ${scalar}`)
    }),
    fuzzOptions(5),
  )
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 10_000_000 }), fc.integer({ min: 1, max: 10_000 }), (milli, units) => {
      const order = compareQuantities(parseQuantity(`${milli}m`) ?? fail(), parseQuantity(`${units}`) ?? fail())
      if (order !== Math.sign(milli - units * 1000)) throw new Error(`${milli}m against ${units}: ${order}`)
    }),
    fuzzOptions(5),
  )
})

t.test(
  'every variable name the parser accepts is one Spin accepts, and every one Spin accepts within the length bound is accepted',
  async () => {
    const names = fc.oneof(
      { weight: 3, arbitrary: glued(['a', 'z', 'q', '0', '9', '_', '__', 'A', '-', '.', ' ', 'é'], 10) },
      { weight: 1, arbitrary: fc.stringMatching(/^[a-z][a-z0-9_]{0,70}$/) },
      { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
    )
    fc.assert(
      fc.property(names, (name) => {
        const ours = isVariableName(name)
        if (ours && !spinAccepts(name)) throw new Error(`accepted ${JSON.stringify(name)}, which Spin refuses`)
        if (!ours && spinAccepts(name) && name.length <= MAX_VARIABLE_NAME_LENGTH)
          throw new Error(`refused ${JSON.stringify(name)}, which Spin accepts`)
      }),
      fuzzOptions(10),
    )
  },
)

t.test(
  'through PATCH: a quantity or name is stored exactly when the parser accepts it, else 400 naming the field',
  async (t) => {
    // No largest memory: what is stored is the parser's say alone (the cap has its own test).
    const control = await startTestControl(t, 'pglite', [
      '--dev-insecure-skip-auth',
      '--runtime',
      'local',
      '--resource-max-memory',
      '',
    ])
    const app = await createApp(control, 'hello')
    await fc.assert(
      fc.asyncProperty(quantityText, async (text) => {
        const reply = await control.call('PATCH', `/applications/${app.id}`, {
          json: { resources: { memoryLimit: text } },
        })
        const accepted = parseQuantity(text) !== null
        if (
          accepted
            ? reply.status !== 200
            : reply.status !== 400 || !/^resources.memoryLimit/.test((reply.body as { error: string }).error)
        ) {
          throw new Error(`${JSON.stringify(text)}: ${reply.status} ${reply.text}`)
        }
      }),
      fuzzOptions(1),
    )
    await fc.assert(
      fc.asyncProperty(glued(['a', 'b', '1', '_', 'A', '-'], 8), async (name) => {
        const reply = await control.call('PATCH', `/applications/${app.id}`, {
          json: { variables: { [name]: { value: 'x' } } },
        })
        const expected = isVariableName(name) ? 200 : 400
        if (
          reply.status !== expected ||
          (expected === 400 && !/^variables/.test((reply.body as { error: string }).error))
        )
          throw new Error(`${JSON.stringify(name)}: ${reply.status} ${reply.text}`)
      }),
      fuzzOptions(1),
    )
    t.pass('every answer as the parsers say')
  },
)

function fail(): never {
  throw new Error('refused')
}

t.test('through PATCH: any JSON body is 200 or 400, never 500, and a 400 changes nothing', async (t) => {
  const control = await startTestControl(t, 'pglite', [
    '--dev-insecure-skip-auth',
    '--runtime',
    'local',
    '--resource-policy',
    'max',
    '--resource-cpu-limit',
    '2',
  ])
  const app = await createApp(control, 'hello')
  const field = fc.oneof(
    fc.constantFrom(
      'description',
      'replicas',
      'autoscaling',
      'resources',
      'concurrency',
      'variables',
      'minReplicas',
      'maxRunning',
      'maxQueued',
      'maxReplicas',
      'targetCpuPercent',
      'cpuRequest',
      'cpuLimit',
      'memoryRequest',
      'memoryLimit',
      'value',
      'secret',
      'secretRef',
      'name',
      'key',
      '__proto__',
      'greeting',
    ),
    fc.string({ maxLength: 6 }),
  )
  const leaf = fc.oneof(
    fc.integer({ min: -2, max: 120 }),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    quantityText,
    fc.string({ maxLength: 8 }),
  )
  const { tree } = fc.letrec<{ tree: unknown }>((tie) => ({
    tree: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leaf,
      fc.array(tie('tree'), { maxLength: 3 }),
      fc.dictionary(field, tie('tree'), { maxKeys: 4 }),
    ),
  }))
  const body = fc.dictionary(field, tree, { maxKeys: 4 })
  await fc.assert(
    fc.asyncProperty(body, async (json) => {
      const before = (await control.call('GET', `/applications/${app.id}`)).text
      const reply = await control.call('PATCH', `/applications/${app.id}`, { json })
      if (reply.status !== 200 && reply.status !== 400)
        throw new Error(`${JSON.stringify(json)}: ${reply.status} ${reply.text}`)
      if (reply.status === 400 && (await control.call('GET', `/applications/${app.id}`)).text !== before)
        throw new Error(`${JSON.stringify(json)}: refused, yet something changed`)
    }),
    fuzzOptions(2),
  )
  t.pass('no 500, and no refusal that changed anything')
})
