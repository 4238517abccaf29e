// What an application keeps when the control plane restarts (issue 43), on the real worker with
// the probe: its port, so its URL stays the same, and its log, read back from the data
// directory; a port another program took meanwhile gives it another rather than no answer.
import { createServer } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { createLocalHosts } from '@session-relay/control/local/hosts'
import type { LocalHosts } from '@session-relay/control/local/hosts'
import { capturedLogger } from '../helpers/captured-logger.js'
import { until } from '../helpers/wait.js'
import { SHARED_COMPILED, WORKER_BIN, pushProbe } from '../helpers/worker-probe.js'

t.setTimeout(180_000)

/** A control plane's local hosts over `dir` (the data directory's worker folder). */
function hostsOver(t: Test, dir: string): { hosts: LocalHosts; logs: string[] } {
  const { logger, logs } = capturedLogger()
  const hosts = createLocalHosts({ logger, dir, worker: () => WORKER_BIN, cacheDir: SHARED_COMPILED })
  t.teardown(() => hosts.close())
  return { hosts, logs }
}

async function urlOf(hosts: LocalHosts, appId: string): Promise<string> {
  const url = await hosts.url(appId, 120_000)
  if (typeof url !== 'string') throw new Error(`no url: ${String(url)}`)
  return url
}

async function logOf(hosts: LocalHosts, appId: string): Promise<string> {
  let text = ''
  for await (const chunk of hosts.log(appId, { follow: false })!) text += (chunk as Buffer).toString('utf8')
  return text
}

t.test('a restart keeps each application on its port and keeps its log', async (t) => {
  const dir = t.testdir({ worker: {} })
  const image = await pushProbe(`oci-layout:${join(dir, 'image')}:b1`)
  const first = hostsOver(t, join(dir, 'worker'))
  await first.hosts.deploy({ id: 'app1' }, image)
  const before = await urlOf(first.hosts, 'app1')
  t.equal((await fetch(`${before}/print?text=before-the-restart`)).status, 200)
  // The worker logs a guest's output after its answer: the line is in once the log has it.
  await until(
    async () => (await logOf(first.hosts, 'app1')).includes('printed before-the-restart'),
    30_000,
    'the line logged',
  )
  await first.hosts.close()

  const second = hostsOver(t, join(dir, 'worker'))
  await second.hosts.deploy({ id: 'app1' }, image)
  t.equal(await urlOf(second.hosts, 'app1'), before, 'the same URL')
  t.equal((await fetch(before)).status, 200, 'answering there')
  t.match(await logOf(second.hosts, 'app1'), /printed before-the-restart/, 'the log from before the restart')
})

t.test('a port another program took meanwhile: the application gets another', async (t) => {
  const dir = t.testdir({ worker: {} })
  const image = await pushProbe(`oci-layout:${join(dir, 'image')}:b1`)
  const first = hostsOver(t, join(dir, 'worker'))
  await first.hosts.deploy({ id: 'app1' }, image)
  const before = new URL(await urlOf(first.hosts, 'app1'))
  await first.hosts.close()

  const squatter = createServer()
  t.teardown(() => squatter.close())
  await new Promise<void>((resolve) => squatter.listen(Number(before.port), '127.0.0.1', resolve))
  const second = hostsOver(t, join(dir, 'worker'))
  await second.hosts.deploy({ id: 'app1' }, image)
  const after = new URL(await urlOf(second.hosts, 'app1'))
  t.not(after.port, before.port, 'another port')
  t.equal((await fetch(after)).status, 200)
  t.match(second.logs.join(''), /the port the application had is taken/)
})
