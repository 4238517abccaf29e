// Builds one js template component as the js builder does (esbuild with build-tools' plugin,
// then j2w), run as a child process in the function's directory: the plugin reads the wit
// worlds of the package.json there. Arguments: none; writes component.wasm in the cwd.
import { execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type * as Esbuild from 'esbuild'
import type { Plugin } from 'esbuild'

const require = createRequire(join(process.cwd(), 'package.json'))
const { build } = (await import(require.resolve('esbuild'))) as typeof Esbuild
const buildTools = dirname(require.resolve('@spinframework/build-tools/package.json'))
// build-tools ships this plugin without types.
const { SpinEsbuildPlugin } = (await import(join(buildTools, 'plugins/esbuild/index.js'))) as {
  SpinEsbuildPlugin: () => Promise<Plugin>
}
await build({
  entryPoints: ['src/index.js'],
  outfile: 'dist/bundle.js',
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'es2020',
  logLevel: 'silent',
  plugins: [await SpinEsbuildPlugin()],
})
execFileSync(process.execPath, [join(buildTools, 'dist/index.js'), '-i', 'dist/bundle.js', '-o', 'component.wasm'], {
  stdio: ['ignore', 'ignore', 'inherit'],
})
