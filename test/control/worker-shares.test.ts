// Each application's share of the worker's instances (issue 40, worker/src/admission.rs), over
// random mixes of applications and limits on the real worker: with `sent` requests held at once,
// an application has min(sent, maxConcurrentRequests) running, the next maxQueuedRequests
// waiting, and the rest answered 429 at once, whatever the other applications do; every
// admitted request is answered when released.
import { connect } from 'node:net'
import fc from 'fast-check'
import t from 'tap'
import { until } from '../helpers/control.js'
import { startWorker } from '../helpers/worker.js'
import { PROBE_WASM, SHARED_COMPILED, probeWasm } from '../helpers/worker-probe.js'

t.setTimeout(300_000)

const lock = {
  spin_lock_version: 1,
  triggers: [{ id: 't', trigger_type: 'http', trigger_config: { component: 'probe', route: '/...' } }],
  components: [{ id: 'probe', source: { content_type: 'application/wasm' } }],
}

type Held = { answer: Promise<string>; finish: () => void }

/** `POST /echo` promising ten bytes and sending five: an admitted one holds its instance until `finish`. */
function held(port: number): Held {
  const socket = connect(port, '127.0.0.1')
  let text = ''
  socket.setEncoding('latin1').on('data', (chunk: string) => (text += chunk))
  socket.on('error', () => {})
  const answer = new Promise<string>((resolve) => socket.on('close', () => resolve(text)))
  socket.write(`POST /echo HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\ncontent-length: 10\r\n\r\n12345`)
  return { answer, finish: () => socket.write('67890') }
}

type Mix = { maxRunning: number; maxQueued: number; sent: number }[]

t.test('random mixes of applications and limits: running, waiting and 429s per application', async (t) => {
  probeWasm()
  const worker = await startWorker(t, { cacheDir: SHARED_COMPILED })
  const stats = async (): Promise<Record<string, { running: number; waiting: number; busyRefusals: number }>> =>
    (await worker.send({ op: 'stats' })).apps as Record<
      string,
      { running: number; waiting: number; busyRefusals: number }
    >
  const app = fc.record({
    maxRunning: fc.integer({ min: 1, max: 3 }),
    maxQueued: fc.integer({ min: 0, max: 3 }),
    sent: fc.integer({ min: 0, max: 8 }),
  })
  let round = 0
  await fc.assert(
    fc.asyncProperty(fc.array(app, { minLength: 1, maxLength: 3 }), async (mix: Mix) => {
      round++
      const ports: number[] = []
      for (const [i, limits] of mix.entries()) {
        const reply = await worker.send({
          op: 'load',
          app: `r${round}a${i}`,
          lock,
          components: { probe: PROBE_WASM },
          limits: { maxConcurrentRequests: limits.maxRunning, maxQueuedRequests: limits.maxQueued },
        })
        if (reply.ok !== true) throw new Error(JSON.stringify(reply))
        ports.push(Number(new URL(String(reply.url)).port))
      }
      const requests = mix.map((limits, i) => Array.from({ length: limits.sent }, () => held(ports[i]!)))
      const expected = mix.map(({ maxRunning, maxQueued, sent }) => {
        const running = Math.min(sent, maxRunning)
        const waiting = Math.min(sent - running, maxQueued)
        return { running, waiting, refused: sent - running - waiting }
      })
      await until(
        async () => {
          const now = await stats()
          return expected.every(
            (want, i) =>
              now[`r${round}a${i}`]?.running === want.running &&
              now[`r${round}a${i}`]?.waiting === want.waiting &&
              now[`r${round}a${i}`]?.busyRefusals === want.refused,
          )
        },
        60_000,
        `the turns of ${JSON.stringify(mix)}`,
      )
      for (const each of requests.flat()) each.finish()
      const answers = await Promise.all(requests.map(async (sent) => await Promise.all(sent.map((r) => r.answer))))
      for (const [i, want] of expected.entries()) {
        const refused = answers[i]!.filter((a) => a.startsWith('HTTP/1.1 429')).length
        const served = answers[i]!.filter((a) => /^HTTP\/1\.1 200 [^]*bytes 10$/.test(a)).length
        if (refused !== want.refused || served !== want.running + want.waiting) {
          throw new Error(`app ${i} of ${JSON.stringify(mix)}: ${served} served, ${refused} refused`)
        }
      }
      for (const i of mix.keys()) await worker.send({ op: 'unload', app: `r${round}a${i}` })
      return true
    }),
    { numRuns: 12 },
  )
  t.pass('every mix held')
})
