// The source guard and the world check as the bundle step uses them, in this process: since every
// step runs in its sandbox, the guard is the second line behind it (a host file is not there to
// resolve), and these prove the first line on its own, with esbuild resolving for real.
import { build } from 'esbuild'
import t from 'tap'
import { sourceGuard } from '@session-relay/builders/source-guard'
import { importLocation, refusedImport } from '@session-relay/builders/world-imports'

/** Bundles `entry` with the guard for the function `dir`; the errors esbuild reports. */
async function bundle(entry: string, dir: string, modules: string): Promise<string[]> {
  try {
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      logLevel: 'silent',
      plugins: [sourceGuard(dir, modules)],
    })
    return result.errors.map((error) => error.text)
  } catch (error) {
    return (error as { errors: Array<{ text: string }> }).errors.map((message) => message.text)
  }
}

t.test('an import that resolves outside the function and its packages is an error naming it', async (t) => {
  const dir = t.testdir({
    fn: {
      'index.js': "import text from '../outside.txt' with { type: 'text' }\nimport './near.js'\nexport { text }\n",
      'near.js': '',
    },
    'outside.txt': 'secret',
    modules: {},
  })
  t.same(await bundle(`${dir}/fn/index.js`, `${dir}/fn`, `${dir}/modules`), [
    `imports "../outside.txt", which is outside the function's directory: a build sees only its own files and the builder's packages`,
  ])
  t.same(await bundle(`${dir}/fn/near.js`, `${dir}/fn`, `${dir}/modules`), [], 'its own files resolve')
})

t.test('the WIT interfaces the runtime gives no function are refused, with where they are imported', async (t) => {
  t.match(refusedImport('wasi:filesystem/types@0.2.0'), /wasi:filesystem/)
  t.equal(refusedImport('fermyon:spin/variables@2.0.0'), null)
  t.same(importLocation("const a = 1\nimport x from 'wasi:sockets/tcp'\n", 'wasi:sockets/tcp'), { line: 2, column: 16 })
})
