// Property over random mixes of applications and their concurrency on the real worker (issue
// 40): each of three applications gets a random share (its own `concurrency`, or the platform's)
// and a random number of requests at once that hold their instance; exactly those past its own
// running and waiting are refused with 429, whatever the others do, and every other one is
// answered 200 once they go on. Fixed seed, a few runs (each reloads three applications).
import fc from 'fast-check'
import t from 'tap'
import { until } from '../helpers/control.js'
import type { TestControl } from '../helpers/control.js'
import { fuzzOptions } from '../helpers/fuzz.js'
import type { Deployment, Held } from '../helpers/local-apps.js'
import { deployed, heldEcho, localControl } from '../helpers/local-apps.js'

t.setTimeout(300_000)

const PLATFORM = { maxRunning: 4, maxQueued: 2 }
const NAMES = ['one', 'two', 'three']

const share = fc.option(
  fc.record({
    maxRunning: fc.integer({ min: 1, max: PLATFORM.maxRunning }),
    maxQueued: fc.integer({ min: 0, max: PLATFORM.maxQueued }),
  }),
)
const mix = fc.array(fc.record({ share, requests: fc.integer({ min: 0, max: 8 }) }), {
  minLength: NAMES.length,
  maxLength: NAMES.length,
})

async function reloaded(control: TestControl, id: string, concurrency: object): Promise<void> {
  await control.call('PATCH', `/applications/${id}`, { json: { concurrency } })
  await until(
    async () =>
      ((await control.call('GET', `/applications/${id}`)).body as { deployment: Deployment }).deployment.ready,
    60_000,
    'the application reloaded',
  )
}

const statusOf = (text: string): string => /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? `no status: ${text.slice(0, 40)}`

t.test('each application refuses exactly its own excess, whatever the others send', async (t) => {
  const control = await localControl(t, [
    '--local-max-concurrent-requests',
    String(PLATFORM.maxRunning),
    '--local-max-queued-requests',
    String(PLATFORM.maxQueued),
  ])
  const apps: Array<{ id: string; url: URL }> = []
  for (const name of NAMES) {
    const url = await deployed(control, name)
    const list = (await control.call('GET', '/applications')).body as Array<{ id: string; name: string }>
    apps.push({ id: list.find((app) => app.name === name)?.id ?? '', url })
  }
  await fc.assert(
    fc.asyncProperty(mix, async (drawn) => {
      for (const [i, { share }] of drawn.entries()) await reloaded(control, apps[i]!.id, share ?? {})
      const held: Held[][] = drawn.map(({ requests }, i) =>
        Array.from({ length: requests }, () => heldEcho(apps[i]!.url)),
      )
      const refusedOf = drawn.map(({ share, requests }) => {
        const { maxRunning, maxQueued } = share ?? PLATFORM
        return Math.max(0, requests - maxRunning - maxQueued)
      })
      // The refusals come at once; the others wait for their bodies.
      await until(
        () => held.every((requests, i) => requests.filter((one) => one.refused()).length >= refusedOf[i]!),
        20_000,
        'every refusal',
      )
      const outcomes = await Promise.all(
        held.map(async (requests) => {
          const answers = await Promise.all(
            requests.map((one) => (one.refused() ? Promise.resolve(one.answer()) : one.finish())),
          )
          const counts: Record<string, number> = {}
          for (const answer of answers) counts[statusOf(answer)] = (counts[statusOf(answer)] ?? 0) + 1
          return counts
        }),
      )
      for (const [i, counts] of outcomes.entries()) {
        const { requests } = drawn[i]!
        const expected: Record<string, number> = {}
        if (requests - refusedOf[i]! > 0) expected['200'] = requests - refusedOf[i]!
        if (refusedOf[i]! > 0) expected['429'] = refusedOf[i]!
        if (JSON.stringify(counts) !== JSON.stringify(expected))
          throw new Error(`${NAMES[i]}: ${JSON.stringify(counts)}, expected ${JSON.stringify(expected)}`)
      }
    }),
    fuzzOptions(0.15),
  )
  t.pass('every application as its own share says')
})
