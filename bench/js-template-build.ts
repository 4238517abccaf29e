// Builds one js template component as the js builder does (its own bundle step, esbuild with
// build-tools' plugin, then j2w), run as a child process in the function's directory: the
// plugin reads the wit worlds of the package.json there. Arguments: none; writes
// component.wasm in the cwd.
import { execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The builder's own bundle step (builders/src/js-bundle.ts), compiled: what a js build runs. */
const BUNDLE_SCRIPT = fileURLToPath(new URL('../../builders/dist/js-bundle.js', import.meta.url))

const require = createRequire(join(process.cwd(), 'package.json'))
const buildTools = dirname(require.resolve('@spinframework/build-tools/package.json'))
execFileSync(process.execPath, [BUNDLE_SCRIPT, 'src/index.js', 'dist/bundle.js'], {
  stdio: ['ignore', 'ignore', 'inherit'],
})
execFileSync(process.execPath, [join(buildTools, 'dist/index.js'), '-i', 'dist/bundle.js', '-o', 'component.wasm'], {
  stdio: ['ignore', 'ignore', 'inherit'],
})
