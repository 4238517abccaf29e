// The tests' way of stopping the processes they start (test/helpers/stop-child.ts): SIGTERM
// first, so a child's exit handlers run (tap's coverage hook writes the child's report from
// one); SIGKILL only for a child that does not exit.
import { spawn } from 'node:child_process'
import t from 'tap'
import type { Test } from 'tap'
import { stopChild } from '../helpers/stop-child.js'

function node(t: Test, script: string) {
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => {
    child.kill('SIGKILL')
  })
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk
  })
  const ready = new Promise<void>((resolve) =>
    child.stdout.on('data', () => {
      if (out.includes('ready')) resolve()
    }),
  )
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  )
  return { child, ready, exit, out: () => out }
}

t.test('a child with exit handlers runs them: it is stopped with SIGTERM, not killed', async (t) => {
  const run = node(
    t,
    "process.on('exit', () => process.stdout.write('exit handler ran')); process.on('SIGTERM', () => process.exit(0)); console.log('ready'); setInterval(() => {}, 1000)",
  )
  await run.ready
  await stopChild(run.child)
  t.same(await run.exit, { code: 0, signal: null })
  t.match(run.out(), /exit handler ran/)
})

t.test('a child that ignores SIGTERM is killed once the grace is over', async (t) => {
  const run = node(t, "process.on('SIGTERM', () => {}); console.log('ready'); setInterval(() => {}, 1000)")
  await run.ready
  await stopChild(run.child, 100)
  t.same(await run.exit, { code: null, signal: 'SIGKILL' })
})

t.test('a child that has exited already: nothing to do', async (t) => {
  const run = node(t, "console.log('ready')")
  await run.exit
  await stopChild(run.child)
  t.pass('resolved')
})
