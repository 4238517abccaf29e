// The report of `npm run test:images`: one line per check, notes, and the counts it ends with.

export let passed = 0
export let failed = 0

export function check(ok: boolean, what: string, detail?: unknown): boolean {
  if (ok) passed++
  else failed++
  console.log(
    `${ok ? 'ok' : 'not ok'} - ${what}${ok || detail === undefined ? '' : `: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`}`,
  )
  return ok
}

export function log(line: string): void {
  console.log(`# ${line}`)
}

export async function timed<T>(what: string, step: () => Promise<T>): Promise<T> {
  const started = Date.now()
  const result = await step()
  log(`${what}: ${((Date.now() - started) / 1000).toFixed(1)} s`)
  return result
}
