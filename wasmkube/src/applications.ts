// Applications by name: the API addresses them by id, the command line by name.
import { WasmkubeError } from './errors.js'
import type { Api } from './http.js'
import type { Application, ApplicationPatch, Summary } from './api/types.js'
import { until } from './wait.js'

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
export async function patchSettings(api: Api, app: Application, body: ApplicationPatch): Promise<Application> {
  const path = `/applications/${encodeURIComponent(app.id)}`
  const patched = await api.json<Application>('PATCH', path, body)
  if (patched.deployment === null || patched.deployment.ready) return patched
  return await until(APPLY_DEADLINE_MS, `${app.name}'s deployment to run the new settings`, async () => {
    const now = await api.json<Application>('GET', path)
    return now.deployment === null || now.deployment.ready ? now : undefined
  })
}
