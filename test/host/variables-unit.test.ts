// Spin's variables resolution as the host answers it, without a component: the lock's checks
// at start and each answer of `get` (value, default, template text, the three errors).
import t from 'tap'
import type { LockedApp } from '@session-relay/spin/format'
import { fromEnvironment, variablesImports } from '@session-relay/host/variables'

function lock (variables: Record<string, unknown>, config: Record<string, string>): LockedApp {
  return {
    spin_lock_version: 1,
    variables,
    triggers: [],
    components: [{ id: 'f', source: { content_type: 'application/wasm' }, config }, { id: 'g', source: { content_type: 'application/wasm' } }],
  }
}

t.test('get answers from the environment, then the default, inside the template text', async (t) => {
  const get = variablesImports(lock({ a: {}, b: { default: 'dflt' }, c: {}, d: { default: 'unused' } }, { x: '{{ a }}-{{b}}', y: '{{ c }}', lit: 'plain', z: '{{ d }}' }), fromEnvironment({
    SPIN_VARIABLE_A: 'from-env', SPIN_VARIABLE_D: '', SPIN_VARIABLE_NOPE: 'x',
  }))('f').get
  t.same(get('x'), { tag: 'ok', val: 'from-env-dflt' })
  t.same(get('lit'), { tag: 'ok', val: 'plain' })
  t.same(get('z'), { tag: 'ok', val: '' }, 'an empty value is a value')
  t.same(get('y'), { tag: 'err', val: { tag: 'provider', val: 'no provider resolved required variable "c"' } })
  t.same(get('nope'), { tag: 'err', val: { tag: 'undefined', val: 'no variable for "f"."nope"' } })
  t.same(get(''), { tag: 'err', val: { tag: 'invalid-name', val: '"": must not be empty' } })
  t.same(get('1a'), { tag: 'err', val: { tag: 'invalid-name', val: '"1a": must start with a lowercase ASCII letter' } })
  t.same(get('a_'), { tag: 'err', val: { tag: 'invalid-name', val: '"a_": must end with a lowercase ASCII letter or digit' } })
  t.same(get('a__b'), { tag: 'err', val: { tag: 'invalid-name', val: '"a__b": must not contain multiple consecutive underscores' } })
  t.same(variablesImports(lock({ a: {} }, { a: '{{ a }}' }), fromEnvironment({}))('g').get('a'), { tag: 'err', val: { tag: 'undefined', val: 'no variable for "g"."a"' } }, 'a component without config has no variables')
  t.same(variablesImports(lock({ a: {} }, { a: '{{ a }}' }), fromEnvironment({}))('unknown').get('a').tag, 'err')
})

t.test('a lock that does not hold together does not start', async (t) => {
  t.throws(() => variablesImports(lock({ Bad: {} }, {}), fromEnvironment({})), /the application's variable "Bad" may contain only/)
  t.throws(() => variablesImports(lock({ a: {} }, { 'Key-1': '{{ a }}' }), fromEnvironment({})), /component f: config key "Key-1" may contain only/)
  t.throws(() => variablesImports(lock({ a: {} }, { k: '{{ b }}' }), fromEnvironment({})), /component f: config k: the template names "b", which the application does not declare/)
  t.throws(() => variablesImports(lock({ a: {} }, { k: 'x {{ a' }), fromEnvironment({})), /component f: config k: unterminated \{\{ in the template/)
  t.doesNotThrow(() => variablesImports({ spin_lock_version: 1, triggers: [], components: [] }, fromEnvironment({})), 'no variables at all')
})
