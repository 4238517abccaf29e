// Child process of a js/ts build, run in the function's directory: bundles the entry with
// esbuild and build-tools' SpinEsbuildPlugin (which reads the wit worlds of the package.json
// dependencies from the current directory, hence a process of its own). Errors are printed as
// `functions/{name}/file:line:column: error: text`, the line the builder turns into the reason.
// The bundle's external imports are the WIT interfaces the code calls: one the runtime gives no
// function (world-imports.ts) fails the step, naming it.
// Arguments: entry outfile displayPrefix.
import { appendFileSync, readFileSync } from 'node:fs'
import { build } from 'esbuild'
import type { Message, Metafile, Plugin } from 'esbuild'
import { realmWarmup } from './realm-warmup.js'
import { sourceGuard } from './source-guard.js'
import { importLocation, refusedImport } from './world-imports.js'

const [entry, outfile, prefix = ''] = process.argv.slice(2)
if (entry === undefined || outfile === undefined) {
  process.stderr.write('usage: js-bundle entry outfile [displayPrefix]\n')
  process.exit(2)
}

// build-tools ships this plugin without types.
const pluginModule = '@spinframework/build-tools/plugins/esbuild/index.js'
const { SpinEsbuildPlugin } = (await import(pluginModule)) as { SpinEsbuildPlugin: () => Promise<Plugin> }

const show = (message: Message): string => {
  const at =
    message.location === null
      ? ''
      : `${prefix}${message.location.file}:${message.location.line}:${message.location.column + 1}: `
  return `${at}error: ${message.text}\n`
}

let metafile: Metafile | undefined
try {
  ;({ metafile } = await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'es2020',
    logLevel: 'silent',
    metafile: true,
    // The guard first: it resolves every import through the others, then judges where it landed.
    plugins: [sourceGuard(process.cwd(), 'node_modules'), await SpinEsbuildPlugin()],
  }))
} catch (error) {
  const errors = (error as { errors?: Message[] }).errors
  if (errors === undefined || errors.length === 0) throw error
  for (const message of errors) process.stderr.write(show(message))
  process.exit(1)
}

let refused = false
for (const [file, input] of Object.entries(metafile?.inputs ?? {})) {
  for (const { path, external } of input.imports) {
    const reason = external === true ? refusedImport(path) : null
    if (reason === null) continue
    const { line, column } = importLocation(readFileSync(file, 'utf8'), path)
    process.stderr.write(`${prefix}${file}:${line}:${column}: error: ${reason}\n`)
    refused = true
  }
}
if (refused) process.exit(1)
const warmup = realmWarmup(metafile)
if (warmup !== '') appendFileSync(outfile, warmup)
