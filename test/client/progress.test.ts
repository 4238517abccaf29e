// relay attach's progress line (client/src/cli/progress.ts), on a stand-in terminal and clock.
import t from 'tap'
import { progressLine } from '../../client/src/cli/progress.js'

const MiB = 1024 * 1024

function terminal(isTTY: boolean): { stderr: NodeJS.WritableStream & { isTTY?: boolean }; text: () => string } {
  let written = ''
  const stderr = {
    isTTY,
    write: (chunk: string) => {
      written += chunk
      return true
    },
  } as unknown as NodeJS.WritableStream & { isTTY?: boolean }
  return { stderr, text: () => written }
}

t.test('the totals are written at the end, whatever the last throttled line said', async (t) => {
  let clock = 1_000
  const tty = terminal(true)
  const progress = progressLine({ stderr: tty.stderr }, () => clock)
  clock += 600
  progress.update(0.1 * MiB, 0)
  clock += 100
  progress.update(5 * MiB, 20 * MiB)
  t.notMatch(tty.text(), /received 20\.0/, 'throttled: at most twice a second')
  progress.end()
  const lines = tty.text().split('\r')
  t.match(lines.at(-1), /^sent 5\.0 MiB, received 20\.0 MiB, [0-9.]+ MiB\/s +\n$/, 'the last line has the totals')
})

t.test('nothing on a stderr that is not a terminal', async (t) => {
  const pipe = terminal(false)
  const progress = progressLine({ stderr: pipe.stderr })
  progress.update(MiB, MiB)
  progress.note('reattached')
  progress.end()
  t.equal(pipe.text(), '')
})
