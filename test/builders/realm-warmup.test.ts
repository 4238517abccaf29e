// The js bundle step (builders/src/js-bundle.ts, compiled, run as the builder runs it) appends
// the variables realm's warm-up (builders/src/realm-warmup.ts) to a bundle that imports Spin's
// variables interface, and to no other: the function's own code stays as written, and a
// function that never reads a variable does not import the interface because of it.
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import type { Test } from 'tap'
import { REALM_WARMUP, VARIABLES_INTERFACE } from '@session-relay/builders/realm-warmup'
import { templateFiles } from '@session-relay/spin/templates'

const repo = fileURLToPath(new URL('../../', import.meta.url))
const bundleScript = join(repo, 'builders', 'dist', 'js-bundle.js')

// Inside the checkout, as the builder's own packages (build-tools' wit) resolve from there.
const bundle = async (t: Test, files: Record<string, string>): Promise<string> => {
  mkdirSync(join(repo, '.cache'), { recursive: true })
  const dir = mkdtempSync(join(repo, '.cache', 'realm-warmup-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
  await promisify(execFile)(process.execPath, [bundleScript, 'src/index.js', 'dist/bundle.js', 'functions/f/'], {
    cwd: dir,
  })
  return readFileSync(join(dir, 'dist', 'bundle.js'), 'utf8')
}

t.test('the template, which reads a variable: the bundle ends with the warm-up', async (t) => {
  const files = templateFiles('js', 'hello')
  const text = await bundle(t, files)
  t.ok(text.endsWith(REALM_WARMUP), 'appended once, at the end')
  t.equal(text.split(REALM_WARMUP).length, 2, 'once')
  t.notMatch(files['src/index.js'], /constructor/, "the template's own code has no part in it")
})

t.test('a function that reads no variable: no warm-up, no import of the interface', async (t) => {
  const files = {
    ...templateFiles('js', 'plain'),
    'src/index.js': "addEventListener('fetch', (event) => event.respondWith(new Response('plain\\n')))\n",
  }
  const text = await bundle(t, files)
  t.notOk(text.includes(REALM_WARMUP))
  t.notOk(text.includes(VARIABLES_INTERFACE))
})
