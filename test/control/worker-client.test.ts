// The typed worker client (control/src/local/worker-client/): every reply is held to the
// protocol's one definition (protocol-schema.ts). On the real worker its replies are taken as
// they are; a process that speaks the protocol but answers another shape (a worker of another
// version, say) is refused with a clear error naming the field, and the client goes on.
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { createWorker } from '@session-relay/control/local/worker-client/process'
import type { Worker } from '@session-relay/control/local/worker-client/process'
import type { WorkerEvent } from '@session-relay/control/local/worker-client/protocol'
import { capturedLogger } from '../helpers/captured-logger.js'
import { until } from '../helpers/wait.js'
import { WORKER_BIN } from '../helpers/worker-probe.js'

t.setTimeout(120_000)

function clientOf(
  t: Test,
  dir: string,
  program: string,
  args: string[],
): { worker: Worker; logs: string[]; events: WorkerEvent[] } {
  const { logger, logs } = capturedLogger('debug')
  const events: WorkerEvent[] = []
  const worker = createWorker({
    logger,
    program: () => program,
    args,
    env: {},
    cwd: dir,
    pidFile: join(dir, 'worker.pid'),
    restartBackoff: { initialMs: 100, maxMs: 100 },
    onLog: () => {},
    onEvent: (event) => events.push(event),
    onDown: () => {},
    onRestart: () => {},
  })
  t.teardown(() => worker.close())
  return { worker, logs, events }
}

t.test("the real worker's replies are typed and checked as they come", async (t) => {
  // A compiled directory of its own: `prune` empties it.
  const dir = t.testdir({ compiled: {} })
  const { worker } = clientOf(t, dir, WORKER_BIN, ['--cache-dir', join(dir, 'compiled')])
  const stats = await worker.send({ op: 'stats' })
  t.same(stats.apps, {}, 'no application yet')
  t.ok(stats.threads >= 1, 'its threads')
  t.ok(stats.memoryBudget.limitBytes > 0, 'its memory budget')
  t.same((await worker.send({ op: 'prune' })).removed, [])
  await t.rejects(worker.send({ op: 'idle', app: 'nobody' }), {
    code: 'ERR_WORKER_COMMAND',
    message: /no application "nobody" is loaded/,
  })
})

// A stand-in worker: right for `prune`, wrong for `stats` and `load`, and an event it has not.
const OFF_PROTOCOL = `
const { createInterface } = require('node:readline')
process.stdout.write(JSON.stringify({ event: 'explode', app: 'a' }) + '\\n')
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, op } = JSON.parse(line)
  const reply =
    op === 'prune' ? { removed: [] }
    : op === 'stats' ? { apps: 'none', appsInMemory: 0, memoryBudget: { limitBytes: 1, usedBytes: 0 }, threads: 1 }
    : op === 'idle' ? { ok: false, error: 'no application "a" is loaded' }
    : { port: 8080 }
  process.stdout.write(JSON.stringify({ ok: true, ...reply, id }) + '\\n')
})
`

t.test('a reply of another shape is refused, naming what is wrong, and the client goes on', async (t) => {
  const dir = t.testdir({ 'worker.cjs': OFF_PROTOCOL })
  const { worker, logs, events } = clientOf(t, dir, process.execPath, [join(dir, 'worker.cjs')])
  await t.rejects(worker.send({ op: 'stats' }), {
    name: 'WorkerProtocolError',
    code: 'ERR_WORKER_PROTOCOL',
    status: 503,
    message: /^the worker's reply to stats is not what the protocol says: \/apps must be object/,
  })
  await t.rejects(worker.send({ op: 'load', app: 'a', lock: {}, components: {} }), {
    code: 'ERR_WORKER_PROTOCOL',
    message: /reply to load is not what the protocol says: .*(url|port)/,
  })
  t.same(await worker.send({ op: 'prune' }), { ok: true, removed: [], id: 3 }, 'a right reply after wrong ones')
  await t.rejects(worker.send({ op: 'idle', app: 'a' }), { code: 'ERR_WORKER_COMMAND' }, 'a failure is a failure')
  t.equal(worker.running(), true, 'the worker is not dropped for it')
  await until(() => logs.some((line) => line.includes('neither a reply nor an event')), 5000, 'the event logged')
  t.same(events, [], 'an event the protocol has not is not handed on')
})
