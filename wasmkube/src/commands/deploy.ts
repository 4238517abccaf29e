// deploy: from a directory to a running deployment in one command. The application is created
// when missing, the directory replaces its first function's source, a build starts and its log
// streams to stderr; then the command waits until the deployment runs this build and answers an
// invoke, and prints where it answers. Polling the API is all there is to wait on (it has no
// events), so each wait has a deadline that says what it waited for.
import { findApp } from '../applications.js'
import type {
  Application,
  Build,
  InvokeRequest,
  InvokeResult,
  Language,
  NewApplication,
  SourceUpload,
  StartedBuild,
} from '../api/types.js'
import { apiFor } from '../context.js'
import type { Io } from '../context.js'
import { UsageError, WasmkubeError } from '../errors.js'
import type { Api } from '../http.js'
import { LANGUAGES, languageOf, readSource } from '../source-dir.js'
import { parseCommand, stringOf } from '../table.js'
import { until } from '../wait.js'
import { printJson } from './listing.js'

const BUILD_DEADLINE_MS = 15 * 60_000
const DEPLOY_DEADLINE_MS = 5 * 60_000
// A cluster may run a relocked copy of the build (another digest): a ready deployment that
// keeps another image this long after the build is taken to be that copy.
const RELOCKED_AFTER_MS = 20_000

export async function deployCommand(args: string[], io: Io): Promise<number> {
  const parsed = parseCommand('deploy', args)
  const dir = parsed.positionals[0] as string
  const name = stringOf(parsed, 'name')
  if (name === undefined) throw new UsageError('--name is required: the application to deploy to')
  const given = stringOf(parsed, 'language')
  if (given !== undefined && !LANGUAGES.includes(given as Language))
    throw new UsageError(`--language: one of ${LANGUAGES.join(', ')}`)
  // Read and checked before anything is sent: a refused file costs no round trip.
  const files = await readSource(dir)
  const api = await apiFor(parsed, io)
  const app = await applicationFor(api, io, name, given as Language | undefined, files)
  const fn = app.functions[0]
  if (fn === undefined) throw new WasmkubeError('bad_answer', `${name} has no function to upload to`)
  await api.json('PUT', `/applications/${app.id}/functions/${fn.id}/source`, { files } satisfies SourceUpload)
  io.stderr.write(`uploaded ${Object.keys(files).length} files to ${name}/${fn.name}\n`)
  const started = await api.json<StartedBuild>('POST', `/applications/${app.id}/builds`)
  io.stderr.write(`build ${started.id} started\n`)
  await api.stream(
    `/applications/${app.id}/builds/${started.id}/logs?follow=true`,
    (chunk) => {
      io.stderr.write(chunk)
    },
    io.signal,
  )
  const build = await until(BUILD_DEADLINE_MS, `build ${started.id} to end`, async () => {
    const now = await api.json<Build>('GET', `/applications/${app.id}/builds/${started.id}`)
    return now.status === 'succeeded' || now.status === 'failed' ? now : undefined
  })
  if (build.status === 'failed')
    throw new WasmkubeError('build_failed', `build ${build.id} failed: ${build.error ?? 'no reason given'}`)
  io.stderr.write(`build ${build.id} succeeded; waiting for the deployment\n`)
  const deployed = await waitForDeployment(api, io, app.id, build)
  await until(DEPLOY_DEADLINE_MS, 'the deployment to answer', async () => {
    try {
      return await api.json<InvokeResult>('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, {
        method: 'GET',
        path: '/',
      } satisfies InvokeRequest)
    } catch (error) {
      // 503: the host is still starting; anything else is a real refusal.
      if (error instanceof WasmkubeError && error.status === 503) return undefined
      throw error
    }
  })
  const url = deployed.deployment?.publicUrl ?? `${api.server}/api/v1/applications/${app.id}/functions/${fn.id}/invoke`
  if (parsed.values.json === true)
    return printJson(io, { application: app.id, function: fn.id, build, deployment: deployed.deployment, url })
  io.stderr.write(`deployed ${name}: wasmkube invoke ${name} [PATH]\n`)
  io.stdout.write(`${url}\n`)
  return 0
}

async function applicationFor(
  api: Api,
  io: Io,
  name: string,
  given: Language | undefined,
  files: Record<string, string>,
): Promise<Application> {
  const found = await findApp(api, name)
  if (found !== undefined) {
    if (given !== undefined && given !== found.language)
      throw new WasmkubeError('refused', `${name} exists as a ${found.language} application, not ${given}`)
    return await api.json<Application>('GET', `/applications/${found.id}`)
  }
  const language = given ?? languageOf(files)
  if (language === undefined)
    throw new UsageError(
      'cannot tell the language from the files (no go.mod, Cargo.toml, tsconfig.json or package.json): pass --language',
    )
  const created = await api.json<Application>('POST', '/applications', {
    name,
    language,
    runtime: 'wasmkube',
  } satisfies NewApplication)
  io.stderr.write(`created the ${language} application ${name}\n`)
  return created
}

/**
 * Until the deployment runs the build and is ready; meanwhile each new reason it gives for not
 * being ready (the control plane's deployment message: an apply refused and retried, a worker
 * restarting) is printed once, and the last one ends the error if the wait gives up.
 */
async function waitForDeployment(api: Api, io: Io, appId: string, build: Build): Promise<Application> {
  let readyElsewhereSince: number | undefined
  let said = ''
  try {
    return await until(
      DEPLOY_DEADLINE_MS,
      'the deployment to run the build',
      async () => {
        const app = await api.json<Application>('GET', `/applications/${appId}`)
        const deployment = app.deployment
        if (deployment === null || !deployment.ready) {
          readyElsewhereSince = undefined
          const reason = deployment?.message ?? ''
          if (reason !== '' && reason !== said) io.stderr.write(`not ready yet: ${reason}\n`)
          said = reason || said
          return undefined
        }
        if (deployment.image === build.imageRef) return app
        readyElsewhereSince ??= Date.now()
        return Date.now() - readyElsewhereSince >= RELOCKED_AFTER_MS ? app : undefined
      },
      io.signal,
    )
  } catch (error) {
    if (error instanceof WasmkubeError && said !== '') throw new WasmkubeError(error.code, `${error.message}: ${said}`)
    throw error
  }
}
