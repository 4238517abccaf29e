// An invoke (or the API's `url`) that comes while its application loads waits for the load,
// up to its own timeout, rather than fail: a deploy, a redeploy or a worker restart takes
// seconds. It follows whichever deployment is the application's now (a redeploy replaces it).
import type { Deployment } from './deployment.js'
import type { Answering } from './state.js'
import { answeringOf } from './state.js'

/** What answers for `appId`, once something does; null when it is not deployed, an Error saying why it cannot answer. */
export async function waitForAnswer(
  deploymentOf: (appId: string) => Deployment | undefined,
  appId: string,
  timeoutMs: number,
): Promise<Answering | null | Error> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const deployment = deploymentOf(appId)
    if (deployment === undefined) return null
    const { state } = deployment
    const answering = answeringOf(state)
    if (answering !== null) return answering
    // The load failed and no worker restart is coming: say why.
    if (state.name === 'failed') return new Error(state.problem)
    const waitMs = deadline - Date.now()
    if (waitMs <= 0) return new Error(('problem' in state ? state.problem : null) ?? 'the application is still loading')
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      deployment.changed,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs)
      }),
    ])
    clearTimeout(timer)
  }
}
