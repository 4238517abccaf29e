// Applications by name: the API addresses them by id, the command line by name.
import { WasmkubeError } from './errors.js'
import type { Api } from './http.js'
import { until } from './wait.js'

export type Summary = {
  id: string
  name: string
  language: string
  runtime: string
  description?: string
  createdAt: string
}
export type Build = {
  id: string
  status: string
  imageRef: string | null
  createdAt: string
  finishedAt: string | null
  error: string | null
}
type Deployment = {
  image: string
  ready: boolean
  internalUrl: string | null
  publicUrl: string | null
  message: string | null
}
export type Variables = Record<
  string,
  { value: string } | { secret: true } | { secretRef: { name: string; key: string } }
>
export type Application = Summary & {
  functions: Array<{ id: string; name: string; route: string }>
  deployment: Deployment | null
  builds: Build[]
  variables?: Variables
  concurrency?: Concurrency
}
export type Concurrency = { maxRunning: number; maxQueued: number }

export async function findApp(api: Api, name: string): Promise<Summary | undefined> {
  const apps = await api.json<Summary[]>('GET', '/applications')
  if (!Array.isArray(apps)) throw new WasmkubeError('bad_answer', 'GET /applications did not answer a list')
  return apps.find((app) => app.name === name)
}

export async function getApp(api: Api, name: string): Promise<Application> {
  const found = await findApp(api, name)
  if (found === undefined)
    throw new WasmkubeError(
      'not_found',
      `no application named ${JSON.stringify(name)} on ${api.server} (wasmkube apps lists them)`,
    )
  return await api.json<Application>('GET', `/applications/${encodeURIComponent(found.id)}`)
}

/** The longest a settings change waits for its deployment to run it. */
const APPLY_DEADLINE_MS = 5 * 60_000

/** PATCHes the application's settings and returns it once its deployment runs them (at once when it has none). */
export async function patchSettings(api: Api, app: Application, body: unknown): Promise<Application> {
  const path = `/applications/${encodeURIComponent(app.id)}`
  const patched = await api.json<Application>('PATCH', path, body)
  if (patched.deployment === null || patched.deployment.ready) return patched
  return await until(APPLY_DEADLINE_MS, `${app.name}'s deployment to run the new settings`, async () => {
    const now = await api.json<Application>('GET', path)
    return now.deployment === null || now.deployment.ready ? now : undefined
  })
}
