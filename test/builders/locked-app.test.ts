// The lock a build pushes carries what each function's variables.toml declares: the defaults at
// the top, each name in the config of the component that declared it; a refusal names the file.
import t from 'tap'
import { declaredVariables, lockedAppOf } from '@session-relay/builders/locked-app'
import { parseSpinToml } from '@session-relay/builders/spin-toml'
import { spinManifest } from '@session-relay/spin/manifest'
import { templateFiles } from '@session-relay/spin/templates'

const manifest = parseSpinToml(
  spinManifest({ name: 'shop', language: 'js' }, [
    { name: 'cart', route: '/cart/...' },
    { name: 'home', route: '/' },
  ]),
)

t.test('defaults at the top, each in the config of the function that declared it', async (t) => {
  const declared = declaredVariables(manifest, {
    'functions/cart/variables.toml': 'currency = { default = "EUR" }\ngreeting = { default = "hello" }\n',
    'functions/home/variables.toml': 'greeting = { default = "hello" }\n',
    'functions/other/variables.toml': 'not = { read = "at all" }',
  })
  const lock = lockedAppOf(manifest, declared)
  t.same(lock.variables, { currency: { default: 'EUR' }, greeting: { default: 'hello' } })
  t.same(Object.keys(lock.variables ?? {}), ['currency', 'greeting'], 'sorted')
  t.same(
    lock.components.map((component) => [component.id, component.config]),
    [
      ['cart', { currency: '{{ currency }}', greeting: '{{ greeting }}' }],
      ['home', { greeting: '{{ greeting }}' }],
    ],
  )
  const bare = lockedAppOf(manifest, declaredVariables(manifest, {}))
  t.notOk('variables' in bare, 'nothing declared: no variables')
  t.notOk(bare.components.some((component) => 'config' in component))
})

t.test("the templates declare greeting, and go's and rust's declare nothing", async (t) => {
  for (const language of ['js', 'ts'] as const) {
    const files = templateFiles(language, 'cart')
    const lock = lockedAppOf(
      manifest,
      declaredVariables(manifest, { 'functions/cart/variables.toml': files['variables.toml'] as string }),
    )
    t.same(lock.variables, { greeting: { default: 'hello' } }, language)
  }
  t.equal(templateFiles('go', 'cart')['variables.toml'], undefined)
  t.equal(templateFiles('rust', 'cart')['variables.toml'], undefined)
})

t.test("refusals name the function's file and line", async (t) => {
  t.throws(
    () => declaredVariables(manifest, { 'functions/home/variables.toml': '\ngreeting = hello' }),
    /^functions\/home\/variables\.toml:2: not a line of the form/,
  )
  t.throws(
    () =>
      declaredVariables(manifest, {
        'functions/cart/variables.toml': 'greeting = { default = "hello" }',
        'functions/home/variables.toml': 'greeting = { default = "hi" }',
      }),
    /^functions\/home\/variables\.toml: greeting has another default in function cart; an application has one value per name$/,
  )
})
