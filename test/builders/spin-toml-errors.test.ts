// The builder reads only the spin.toml the control plane generates; anything else is refused
// with the line or the table that is wrong, never guessed at (builders/src/spin-toml.ts).
import t from 'tap'
import { parseSpinToml } from '@session-relay/builders/spin-toml'

const HEAD = 'spin_manifest_version = 2\n[application]\nname = "shop"\n'

t.test('each refusal names what is wrong', async (t) => {
  const cases: Array<[string, string, string]> = [
    [
      'a key that is a value, then an array of tables',
      'spin_manifest_version = 2\ntrigger = 1\n[[trigger]]\n',
      'spin.toml:3: trigger is not an array of tables',
    ],
    ['a table under a value', `${HEAD}[application.name]\n`, 'spin.toml:4: name is not a table'],
    [
      'a line of TOML the generator never writes',
      `${HEAD}name.first = "x"\n`,
      'spin.toml:4: not a line of the generated manifest',
    ],
    [
      'a trigger without a component',
      `${HEAD}[[trigger.http]]\nroute = "/"\n`,
      'spin.toml: trigger.http #1 needs a route and a component',
    ],
    [
      'a component without a source',
      `${HEAD}[component.f]\nallowed_outbound_hosts = []\n`,
      'spin.toml: component f needs a source path',
    ],
    [
      'outbound hosts that are not strings',
      `${HEAD}[component.f]\nsource = "f.wasm"\nallowed_outbound_hosts = [1]\n`,
      'spin.toml: component f: allowed_outbound_hosts must be strings',
    ],
    [
      'outbound hosts that are not a list',
      `${HEAD}[component.f]\nsource = "f.wasm"\nallowed_outbound_hosts = "*"\n`,
      'spin.toml: component f: allowed_outbound_hosts must be strings',
    ],
  ]
  for (const [name, text, message] of cases) t.throws(() => parseSpinToml(text), { message }, name)
})

t.test('what the generator may leave out has its default', async (t) => {
  const manifest = parseSpinToml(`${HEAD}# a comment\n\n[component.f]\nsource = "functions/f/component.wasm"\n`)
  t.same(manifest, {
    name: 'shop',
    version: '0.1.0',
    triggers: [],
    components: [{ id: 'f', source: 'functions/f/component.wasm', allowedOutboundHosts: [], workdir: null }],
  })
})
