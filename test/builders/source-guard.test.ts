// A build reads the function's own files and the builder's packages, nothing else: an import
// of a file outside the function (absolute, a text or JSON import, /proc) fails the build with
// the import named and nothing of the file in the log, and so does a witPath or a manifest
// path that leaves the function's directory (builders/src/source-guard.ts).
import { dirname, join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { parseSpinToml } from '@session-relay/builders/spin-toml'
import { templateFiles } from '@session-relay/spin/templates'
import { runBuilder, sourceArchive } from '../helpers/spin-processes.js'

t.setTimeout(120_000)

const CANARY = 'canary-value-that-must-not-leave-its-file'

async function buildJs(
  t: Test,
  files: Record<string, string>,
): Promise<{ code: number | null; log: string; termination: string }> {
  const archive = await sourceArchive(t, { name: 'guarded', language: 'js' }, [{ name: 'f', route: '/...', files }])
  // Beside the archive (its own temporary directory): t.testdir is the test's canary directory.
  return runBuilder(t, {
    SOURCE_ARCHIVE: archive,
    IMAGE_REF: `oci-layout:${dirname(archive)}/image:b1`,
    APPLICATION: 'guarded',
    LANGUAGE: 'js',
    BUILD_ID: 'b1',
  })
}

t.test('an import of a file outside the function fails the bundle, naming it', async (t) => {
  const outside = t.testdir({ 'secret.key': CANARY, 'settings.json': JSON.stringify({ key: CANARY }) })
  const cases: Array<[string, string]> = [
    ['a text import by absolute path', `import secret from '${join(outside, 'secret.key')}' with { type: 'text' }\n`],
    ['a JSON import by absolute path', `import settings from '${join(outside, 'settings.json')}'\n`],
    ["the builder's own environment", "import env from '/proc/self/environ' with { type: 'text' }\n"],
  ]
  for (const [name, line] of cases) {
    const files = templateFiles('js', 'f')
    files['src/index.js'] = `${line}${files['src/index.js'] as string}`
    const build = await buildJs(t, files)
    t.not(build.code, 0, `${name}: the build fails`)
    t.match(
      build.termination,
      // The source guard names it; a host file the sandbox does not show cannot even be resolved.
      /^function f: functions\/f\/src\/index\.js:1:\d+: error: (imports ".+", which is outside the function's directory|Could not resolve ".+")/,
      `${name}: the import is named`,
    )
    t.notMatch(build.log + build.termination, new RegExp(CANARY), `${name}: nothing of the file is shown`)
  }
})

t.test('a witPath outside the function is refused before anything runs', async (t) => {
  for (const witPath of ['/etc', '../..', './wit/../../other']) {
    const files = templateFiles('js', 'f')
    const pkg = JSON.parse(files['package.json'] as string) as {
      config: { witDependencies: Array<{ witPath: string }> }
    }
    pkg.config.witDependencies[0]!.witPath = witPath
    files['package.json'] = JSON.stringify(pkg)
    const build = await buildJs(t, files)
    t.not(build.code, 0)
    t.match(
      build.termination,
      /^functions\/f\/package\.json: config\.witDependencies: witPath ".+" (is absolute|leaves the function's directory)/,
      witPath,
    )
  }
})

t.test('the imports the function may make still build their bundle', async (t) => {
  const files = templateFiles('js', 'f')
  files['src/data.json'] = JSON.stringify({ greeting: 'hi' })
  files['src/index.js'] =
    `import data from './data.json'\nconsole.log(data.greeting)\n${files['src/index.js'] as string}`
  const build = await buildJs(t, files)
  t.match(build.log, /componentiz|built in/i, `past the bundle: ${build.termination}`)
})

t.test("a manifest path out of the application's directory", async (t) => {
  const head = 'spin_manifest_version = 2\n[application]\nname = "shop"\n'
  t.throws(() => parseSpinToml(`${head}[component.f]\nsource = "../../etc/f.wasm"\n`), {
    message: 'spin.toml: component f: "../../etc/f.wasm" leaves the application\'s directory',
  })
  t.throws(() => parseSpinToml(`${head}[component.f]\nsource = "f.wasm"\n[component.f.build]\nworkdir = "/tmp"\n`), {
    message: 'spin.toml: component f: "/tmp" leaves the application\'s directory',
  })
})

t.test('a variables.toml the builder refuses fails the build before anything runs, naming its line', async (t) => {
  const files = templateFiles('js', 'f')
  files['variables.toml'] = `greeting = { default = "hello" }\napi = { default = "${CANARY}" "more" }\n`
  const build = await buildJs(t, files)
  t.not(build.code, 0)
  t.equal(build.termination.trim(), 'functions/f/variables.toml:2: the default is not one double-quoted string')
  t.notMatch(build.log, /bundle|componentize/, 'no step ran')
})
