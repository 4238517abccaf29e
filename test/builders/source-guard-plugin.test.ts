// The source guard and the world check as the bundle step uses them, in this process: since every
// step runs in its sandbox, the guard is the second line behind it (a host file is not there to
// resolve), and these prove the first line on its own, with esbuild resolving for real.
import { build } from 'esbuild'
import t from 'tap'
import { sourceGuard } from '@session-relay/builders/source-guard'
import { importLocation, refusedImport } from '@session-relay/builders/world-imports'

t.test('an import that resolves outside the function and its packages is an error naming it', async (t) => {
  const dir = t.testdir({
    fn: {
      'index.js': "import text from '../outside.txt' with { type: 'text' }\nimport './near.js'\nexport { text }\n",
      'near.js': '',
    },
    'outside.txt': 'secret',
    modules: {},
  })
  const result = await build({
    entryPoints: [`${dir}/fn/index.js`],
    bundle: true,
    write: false,
    logLevel: 'silent',
    plugins: [sourceGuard(`${dir}/fn`, `${dir}/modules`)],
  }).catch((error: { errors: Array<{ text: string }> }) => error)
  const errors = 'errors' in result ? result.errors.map((error) => error.text) : []
  t.same(errors, [
    `imports "../outside.txt", which is outside the function's directory: a build sees only its own files and the builder's packages`,
  ])
  const inside = await build({
    entryPoints: [`${dir}/fn/near.js`],
    bundle: true,
    write: false,
    logLevel: 'silent',
    plugins: [sourceGuard(`${dir}/fn`, `${dir}/modules`)],
  })
  t.equal(inside.errors.length, 0, 'its own files resolve')
})

t.test('the WIT interfaces the runtime gives no function are refused, with where they are imported', async (t) => {
  t.match(refusedImport('wasi:filesystem/types@0.2.0'), /wasi:filesystem/)
  t.equal(refusedImport('fermyon:spin/variables@2.0.0'), null)
  t.same(importLocation("const a = 1\nimport x from 'wasi:sockets/tcp'\n", 'wasi:sockets/tcp'), { line: 2, column: 16 })
})
