// Hello-world sources per language (spin/templates/{language}/), for the control plane to
// give a new function: every file of the language's folder with `{{function}}` replaced by the
// function's name, as the file map the source store keeps (paths relative to the function).
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

export type TemplateLanguage = 'js' | 'ts' | 'go' | 'rust'

// spin/templates: one level up from both spin/src (tests run the sources) and spin/dist.
function templatesDir(): string {
  return fileURLToPath(new URL('../templates/', import.meta.url))
}

const cache = new Map<TemplateLanguage, Record<string, string>>()

function filesOf(dir: string, root: string = dir): Record<string, string> {
  const files: Record<string, string> = {}
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) Object.assign(files, filesOf(path, root))
    else files[relative(root, path).split('\\').join('/')] = readFileSync(path, 'utf8')
  }
  return files
}

/** The template's files for a function called `functionName`, path to content. */
export function templateFiles(language: TemplateLanguage, functionName: string): Record<string, string> {
  let raw = cache.get(language)
  if (raw === undefined) {
    raw = filesOf(join(templatesDir(), language))
    cache.set(language, raw)
  }
  const files: Record<string, string> = {}
  for (const path of Object.keys(raw).sort())
    files[path] = (raw[path] as string).replaceAll('{{function}}', functionName)
  return files
}
