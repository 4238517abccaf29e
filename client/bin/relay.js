#!/usr/bin/env node
// The `relay` command from a checkout: runs the compiled CLI, compiling it first when the
// checkout has not been built yet (npm ci installs TypeScript; `npm run build` rebuilds).
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const main = join(root, 'dist', 'cli', 'main.js')
if (!existsSync(main)) {
  process.stderr.write('relay: compiling the client once (npm run build does it too)\n')
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  // -b builds the login package it references first; --noCheck: checking types is the build's
  // job, this only needs the JavaScript.
  execFileSync(process.execPath, [tsc, '-b', '--noCheck', join(root, 'tsconfig.json')], { stdio: 'inherit' })
}
await import(pathToFileURL(main).href)
