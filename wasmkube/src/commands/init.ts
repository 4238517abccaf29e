// init: the language's hello-world, written locally from the templates the control plane gives
// a new function (spin/templates/, read from the checkout this package lives in).
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { basename, dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { UsageError, WasmkubeError } from '../errors.js'
import type { Io } from '../context.js'
import { LANGUAGES } from '../source-dir.js'
import type { Language } from '../api/types.js'
import { parseCommand, stringOf } from '../table.js'

// wasmkube/dist/commands/init.js (or wasmkube/src/commands/init.ts) -> spin/templates
const TEMPLATES = fileURLToPath(new URL('../../../spin/templates/', import.meta.url))

export async function initCommand(args: string[], io: Io): Promise<number> {
  const parsed = parseCommand('init', args)
  const dir = resolve(parsed.positionals[0] as string)
  const language = stringOf(parsed, 'language')
  if (language === undefined || !LANGUAGES.includes(language as Language))
    throw new UsageError(`--language: one of ${LANGUAGES.join(', ')}`)
  const name = stringOf(parsed, 'name') ?? basename(dir)
  // The API's name rule (control/src/model/resources.ts).
  if (!/^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name))
    throw new UsageError(
      `--name: ${JSON.stringify(name)} is not a name the platform takes (a lowercase letter, then letters, digits and "-", at most 63)`,
    )
  if (existsSync(dir) && (await readdir(dir)).length > 0)
    throw new WasmkubeError('local', `${dir} is not empty: init writes into a new or empty directory`)
  const root = join(TEMPLATES, language)
  if (!existsSync(root))
    throw new WasmkubeError('local', `no templates at ${TEMPLATES}: wasmkube runs from a checkout of the repository`)
  for (const file of await filesUnder(root)) {
    const target = join(dir, relative(root, file))
    await mkdir(dirname(target), { recursive: true })
    await writeFile(target, (await readFile(file, 'utf8')).replaceAll('{{function}}', name))
  }
  io.stderr.write(
    `wrote a ${language} function ${name} into ${dir}; next: wasmkube deploy ${parsed.positionals[0]} --name ${name}\n`,
  )
  return 0
}

async function filesUnder(dir: string): Promise<string[]> {
  const found: string[] = []
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) found.push(...(await filesUnder(path)))
    else found.push(path)
  }
  return found
}
