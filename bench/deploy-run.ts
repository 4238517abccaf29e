// One deploy as a user makes it, taken apart: the source PUT, the build's queue (until its log's
// first line), each build step (from the builder's own timings in the log: `<== step: N ms`),
// the push, the build's end as the API reports it, then the worker (its compile, from the
// control plane's debug log of the worker's lines) until the application's own URL answers 200
// with this source's text. Times on this process's clock, from the PUT's start.
import { controlApi, poll } from './local-control.js'

export type Phases = {
  putMs: number
  queueMs: number
  steps: Record<string, number>
  pushMs: number
  /** The build's end (the log's last line) to the API saying succeeded. */
  buildEndMs: number
  /**
   * The worker's compiles logged between the build's start and the first answer (`component
   * compiled`), by compiler: with --baseline-first, Winch's is this deploy's and a Cranelift
   * line there is a compile in the background (this deploy's or the one before).
   */
  compileMs: { winch: number; cranelift: number }
  /** Build succeeded to the first 200 with the new text at the application's URL. */
  deployMs: number
  totalMs: number
}

export type Target = { base: string; appId: string; fnId: string }

/** `component compiled` lines of the worker seen so far: the bench's control plane log reader fills it. */
export type CompileLog = Array<{ at: number; ms: number; compiler: string }>

const POLL_MS = 50

/** The build's log, followed to its end; each line with when it arrived. */
async function followLog(target: Target, buildId: string): Promise<Array<{ at: number; line: string }>> {
  const url = `${target.base}/api/v1/applications/${target.appId}/builds/${buildId}/logs?follow=true`
  const response = await fetch(url)
  if (!response.ok || response.body === null) throw new Error(`build log: ${response.status}`)
  const lines: Array<{ at: number; line: string }> = []
  let rest = ''
  const decoder = new TextDecoder()
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    rest += decoder.decode(chunk, { stream: true })
    const parts = rest.split('\n')
    rest = parts.pop() ?? ''
    for (const line of parts) lines.push({ at: performance.now(), line })
  }
  if (rest !== '') lines.push({ at: performance.now(), line: rest })
  return lines
}

const STEP_DONE = /^<== ([^:]+): (\d+) ms$/
const PUSHED = /^pushed .* in ([\d.]+) s$/

export async function deployOnce(
  target: Target,
  files: Record<string, string>,
  expected: string,
  compiles: CompileLog,
  timeoutMs: number,
): Promise<Phases> {
  const { base, appId, fnId } = target
  const started = performance.now()
  await controlApi(base, 'PUT', `/applications/${appId}/functions/${fnId}/source`, { files })
  const putMs = performance.now() - started
  const build = await controlApi(base, 'POST', `/applications/${appId}/builds`)
  const posted = performance.now()
  const log = await followLog(target, String(build.id))
  const finished = await poll('the build', timeoutMs, POLL_MS, async () => {
    const now = await controlApi(base, 'GET', `/applications/${appId}/builds/${String(build.id)}`)
    return now.status === 'succeeded' || now.status === 'failed' ? now : null
  })
  const succeeded = performance.now()
  if (finished.status !== 'succeeded')
    throw new Error(`build failed: ${String(finished.error)}\n${log.map((l) => l.line).join('\n')}`)
  const answered = await poll('the new source to answer', timeoutMs, POLL_MS, async () => {
    const view = await controlApi(base, 'GET', `/applications/${appId}`)
    const url = (view.deployment as { publicUrl: string | null } | null)?.publicUrl
    if (typeof url !== 'string') return null
    const response = await fetch(`${url}/`)
    const text = await response.text()
    return response.status === 200 && text.includes(expected) ? performance.now() : null
  })
  const steps: Record<string, number> = {}
  let pushMs = 0
  for (const { line } of log) {
    const step = STEP_DONE.exec(line)
    if (step !== null) steps[step[1] as string] = (steps[step[1] as string] ?? 0) + Number(step[2])
    const pushed = PUSHED.exec(line)
    if (pushed !== null) pushMs = Number(pushed[1]) * 1000
  }
  const first = log[0]?.at ?? succeeded
  const last = log.at(-1)?.at ?? succeeded
  const inWindow = compiles.filter((c) => c.at >= posted && c.at <= answered)
  const sum = (compiler: string): number =>
    inWindow.filter((c) => c.compiler === compiler).reduce((total, c) => total + c.ms, 0)
  const compileMs = { winch: sum('winch'), cranelift: sum('cranelift') }
  return {
    putMs,
    queueMs: first - posted,
    steps,
    pushMs,
    buildEndMs: succeeded - last,
    compileMs,
    deployMs: answered - succeeded,
    totalMs: answered - started,
  }
}
