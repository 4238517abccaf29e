// `npm run relay` (and `control`, `dev`) must stop its server when npm is told to stop. npm
// passes SIGTERM to the shell running the script, and a shell running `a && node b` waits for
// node without passing it on: npm ended and the server stayed on its port (issue 43). The
// scripts end in `exec node ...`, so the server is the process npm signals.
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const root = fileURLToPath(new URL('../../', import.meta.url))

/** Every process under `pid`, read from /proc (children of each of its threads). */
function descendants(pid: number): number[] {
  const found: number[] = []
  const walk = (parent: number): void => {
    let tasks: string[] = []
    try {
      tasks = readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)
    } catch {
      return
    }
    for (const child of tasks.map(Number)) {
      found.push(child)
      walk(child)
    }
  }
  walk(pid)
  return found
}

const accepts = async (port: number): Promise<boolean> =>
  await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })

t.test('SIGTERM to `npm run relay` stops the relay itself', async (t) => {
  const npm = spawn('npm', ['run', '--silent', 'relay', '--', '--addr', '127.0.0.1:0', '--no-auth'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let servers: number[] = []
  // Whatever the outcome, nothing of it outlives the test.
  t.teardown(() => {
    for (const pid of [npm.pid ?? 0, ...servers]) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
  })
  const port = await new Promise<number>((resolve, reject) => {
    let out = ''
    npm.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      const listening = /"port":(\d+)[^\n]*relay listening/.exec(out)
      if (listening !== null) resolve(Number(listening[1]))
    })
    npm.once('exit', (code) => reject(new Error(`npm ended (${code}) before the relay listened: ${out}`)))
  })
  servers = descendants(npm.pid!)
  t.ok(await accepts(port), 'the relay listens')
  const exited = new Promise((resolve) => npm.once('exit', resolve))
  npm.kill('SIGTERM')
  await exited
  // The relay drains and exits on SIGTERM; a relay left behind keeps accepting.
  for (let i = 0; i < 200 && (await accepts(port)); i++) await new Promise((resolve) => setTimeout(resolve, 50))
  t.notOk(await accepts(port), 'the port is closed: no relay left behind')
  t.same(
    servers.filter((pid) => {
      try {
        process.kill(pid, 0)
        return true
      } catch {
        return false
      }
    }),
    [],
    'no process of the script left',
  )
})

t.test('every script that starts a server execs it', async (t) => {
  const scripts = (JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { scripts: Record<string, string> })
    .scripts
  for (const name of ['relay', 'control', 'dev']) t.match(scripts[name], /&& exec node /, name)
})
