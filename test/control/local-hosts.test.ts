// The local runtime's hosts, driven directly with the stand-in host program: a host that dies
// is started again after a backoff that doubles, and the next request reaches the new one;
// variables reach the host over its stdin (and none through its environment) on an artifact re-locked
// to declare them, and an artifact that cannot be re-locked leaves the running host alone.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import t from 'tap'
import type { Test } from 'tap'
import { pullSpinApp, pushSpinApp } from '../../common/src/spin/artifact.js'
import { parseRef } from '../../common/src/spin/ref.js'
import { openStore } from '../../common/src/spin/store.js'
import { createLocalHosts } from '../../control/src/local/hosts.js'
import type { LocalHosts } from '../../control/src/local/hosts.js'
import { createLogger } from '../../control/src/logger.js'
import { writeStandIns } from '../fixtures/local-programs.js'
import { until } from '../helpers/wait.js'

function hostsFor (t: Test, restartBackoff: { initialMs: number; maxMs: number }): { hosts: LocalHosts; dir: string; logs: string[] } {
  const dir = t.testdir({ hosts: {} })
  const { hostMain } = writeStandIns(dir)
  const logs: string[] = []
  const logger = createLogger('info', new Writable({ write (chunk: Buffer, _encoding, done) { logs.push(chunk.toString('utf8')); done() } }))
  const hosts = createLocalHosts({ logger, dir: join(dir, 'hosts'), host: () => hostMain, env: {}, restartBackoff })
  t.teardown(() => hosts.close())
  return { hosts, dir, logs }
}

type Answer = { pid: number; ref: string; vars: Record<string, string>; environment: string[] }

async function answer (hosts: LocalHosts, appId: string): Promise<Answer> {
  const url = await hosts.url(appId, 10_000)
  if (typeof url !== 'string') throw new Error(`no url: ${String(url)}`)
  return await (await fetch(`${url}/`)).json() as Answer
}

t.test('a host killed from outside is restarted with a doubling backoff; the next request works', async (t) => {
  const { hosts, dir } = hostsFor(t, { initialMs: 40, maxMs: 1000 })
  await hosts.deploy({ id: 'app1' }, 'oci-layout:/images/app1:b1')
  const first = await answer(hosts, 'app1')
  t.equal(first.ref, 'oci-layout:/images/app1:b1')
  t.equal(Number(readFileSync(join(dir, 'hosts', 'app1.pid'), 'utf8')), first.pid)

  process.kill(first.pid, 'SIGKILL')
  await until(() => hosts.status('app1')?.ready === false, 5000, 'the exit noticed')
  const second = await answer(hosts, 'app1')
  t.not(second.pid, first.pid, 'a new host answers')
  t.equal(second.ref, first.ref, 'on the same image')
  t.match(hosts.status('app1'), { ready: true, running: true, message: '1 of 1 replicas ready' })
})

t.test('while it waits for the restart the status says so, and the delay doubles up to the cap', async (t) => {
  const { hosts, logs } = hostsFor(t, { initialMs: 100, maxMs: 200 })
  await hosts.deploy({ id: 'app2' }, 'oci-layout:/images/app2:b1')
  for (const expected of [100, 200, 200]) {
    const { pid } = await answer(hosts, 'app2')
    process.kill(pid, 'SIGKILL')
    await until(() => /restarting/.test(hosts.status('app2')?.message ?? ''), 5000, 'the exit noticed')
    t.match(hosts.status('app2'), { ready: false, url: null, message: new RegExp(`^the host exited \\(SIGKILL\\); restarting in ${expected} ms`) })
  }
  await answer(hosts, 'app2')
  t.match(logs.join(''), /"delayMs":100[^]*"delayMs":200[^]*"delayMs":200/)
})

t.test('a host that is removed is not restarted', async (t) => {
  const { hosts } = hostsFor(t, { initialMs: 10, maxMs: 10 })
  await hosts.deploy({ id: 'app3' }, 'oci-layout:/images/app3:b1')
  const { pid } = await answer(hosts, 'app3')
  await hosts.remove('app3')
  t.equal(hosts.status('app3'), null)
  t.equal(await hosts.url('app3', 100), null)
  t.throws(() => process.kill(pid, 0), 'the host is gone')
})

t.test("variables: the values on the host's stdin and none in its environment, on the artifact re-locked with their names", async (t) => {
  const { hosts, dir } = hostsFor(t, { initialMs: 10, maxMs: 10 })
  const layout = join(dir, 'image')
  const store = await openStore(parseRef(`oci-layout:${layout}:b1`), { dockerConfigDir: null })
  const built = await pushSpinApp(store, 'b1', {
    lockedApp: { spin_lock_version: 1, triggers: [{ id: 'f-http-trigger', trigger_type: 'http', trigger_config: { component: 'f', route: '/...' } }], components: [{ id: 'f', source: { content_type: 'application/wasm' } }] },
    wasm: new Map([['f', Buffer.from('\0asm stand-in')]]),
  })
  const image = `oci-layout:${layout}@${built.digest}`
  process.env.SPIN_VARIABLE_INHERITED = 'from-the-control-plane'
  t.teardown(() => { delete process.env.SPIN_VARIABLE_INHERITED })

  await hosts.deploy({ id: 'app4' }, image, { greeting: 'hi', api_key: 'k' })
  const first = await answer(hosts, 'app4')
  t.same(first.vars, { greeting: 'hi', api_key: 'k' }, 'the values, over stdin')
  t.same(first.environment, [], "no SPIN_VARIABLE_* in the host's environment, not even the control plane's")
  t.match(first.ref, new RegExp(`^oci-layout:${layout}@sha256:[0-9a-f]{64}$`))
  t.not(first.ref, image, 'the host runs the re-locked artifact')
  t.equal(hosts.status('app4')?.image, first.ref)
  const lock = (await pullSpinApp(store, first.ref.slice(first.ref.indexOf('@') + 1))).lockedApp
  t.same(lock.variables, { api_key: {}, greeting: {} })
  t.same(lock.components[0]!.config, { api_key: '{{ api_key }}', greeting: '{{ greeting }}' })

  await hosts.deploy({ id: 'app4' }, image, {})
  const plain = await answer(hosts, 'app4')
  t.same({ ref: plain.ref, vars: plain.vars }, { ref: image, vars: {} }, 'no variables: the artifact as built')

  await t.rejects(hosts.deploy({ id: 'app4' }, `oci-layout:${layout}@sha256:${'0'.repeat(64)}`, { greeting: 'x' }), /is not in/)
  const still = await answer(hosts, 'app4')
  t.equal(still.ref, image, 'an artifact that cannot be re-locked leaves the running host alone')
})
