// Builds one js template component as the js builder does (its own bundle step, esbuild with
// build-tools' plugin, then j2w), run as a child process in the function's directory: the
// plugin reads the wit worlds of the package.json there. Arguments: none; writes
// component.wasm in the cwd.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { preinitBinds } from '@session-relay/builders/js-preinit'

/** The builder's own bundle step (builders/src/js-bundle.ts), compiled: what a js build runs. */
const BUNDLE_SCRIPT = fileURLToPath(new URL('../../builders/dist/js-bundle.js', import.meta.url))

const require = createRequire(join(process.cwd(), 'package.json'))
const buildTools = dirname(require.resolve('@spinframework/build-tools/package.json'))
execFileSync(process.execPath, [BUNDLE_SCRIPT, 'src/index.js', 'dist/bundle.js'], {
  stdio: ['ignore', 'ignore', 'inherit'],
})
const j2w = [process.execPath, join(buildTools, 'dist/index.js'), '-i', 'dist/bundle.js', '-o', 'component.wasm']
// As the local builder does (builders/src/js-preinit.ts): the worker's preinit in the place of
// componentize-js's wizer and its adapter in the place of jco's, bound over them in a mount
// namespace of this command's own; with BENCH_WORKER_PREINIT=false, or no preinit built,
// componentize-js's own.
const preinit = fileURLToPath(new URL('../../.cache/worker/target/release/preinit', import.meta.url))
if (process.env.BENCH_WORKER_PREINIT !== 'false' && existsSync(preinit)) {
  const tools = await preinitBinds(preinit, buildTools)
  try {
    const binds = tools.binds.flatMap((bind) => ['--ro-bind', bind.from, bind.to])
    execFileSync('bwrap', ['--dev-bind', '/', '/', ...binds, ...j2w], { stdio: ['ignore', 'ignore', 'inherit'] })
  } finally {
    await tools.dispose()
  }
} else {
  execFileSync(j2w[0]!, j2w.slice(1), { stdio: ['ignore', 'ignore', 'inherit'] })
}
