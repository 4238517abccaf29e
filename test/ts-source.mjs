// The test run's one loader hook (tap's "node-arg" loads it). Test files and their helpers run
// as TypeScript, on Node's own type stripping. The code under test runs compiled, from each
// package's dist/ (tsc's output, which `npm test` builds first), the same files the processes
// the tests start run: coverage then maps both through the same source maps, where a module
// loaded once stripped and once compiled counted each of its functions twice. The package
// specifiers (`@session-relay/control/...`) resolve to dist/ by their exports; this maps a
// relative import of a source file (`../../client/src/index.js`, `../../scripts/x.js`) to its
// compiled twin, and any other `./x.js` written in a test to the `./x.ts` beside it.
//
// tap's default, ts-node, transpiled every module a test imports in every test process: about
// 5 s of CPU for a file that imports the control plane (with this: under 2).
//
// An asynchronous hook, on Node's hooks thread, like tap's own (coverage, t.mockImport): on
// Node 22 a synchronous one (module.registerHooks) beside them deadlocked t.mockImport.
import { existsSync, readFileSync } from 'node:fs'
import { register } from 'node:module'
import { isMainThread } from 'node:worker_threads'

if (isMainThread) register(import.meta.url)

const REPO = new URL('../', import.meta.url).href
// The workspaces: a package without a compiled twin of a file (the console's, bundled by vite)
// has it looked for and not found.
const PACKAGES = JSON.parse(readFileSync(new URL('package.json', REPO), 'utf8')).workspaces

/** The compiled file of a source file of this repository, when it has one. */
function compiledTwin(url) {
  if (!url.startsWith(REPO) || !url.endsWith('.ts')) return null
  const path = url.slice(REPO.length, -3)
  const [top, second] = path.split('/')
  let twin = null
  if (PACKAGES.includes(top) && second === 'src') twin = `${top}/dist/${path.slice(top.length + 5)}.js`
  else if (top === 'scripts' || top === 'bench') twin = `dist/${path}.js`
  return twin !== null && existsSync(new URL(twin, REPO)) ? REPO + twin : null
}

export async function resolve(specifier, context, nextResolve) {
  if (
    specifier.endsWith('.js') &&
    (specifier.startsWith('./') || specifier.startsWith('../')) &&
    context.parentURL?.endsWith('.ts')
  ) {
    const source = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL).href
    const twin = compiledTwin(source)
    if (twin !== null) return nextResolve(twin, context)
    try {
      return await nextResolve(source, context)
    } catch (error) {
      if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error
    }
  }
  return nextResolve(specifier, context)
}
