// Where `npm run test:images` finds the checkout and keeps its cache and logs.
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const repo = fileURLToPath(new URL('../..', import.meta.url))
export const cacheDir = join(repo, '.cache', 'test-images')
