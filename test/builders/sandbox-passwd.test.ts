// The sandbox's passwd entry under the control plane's umask (077, control/src/main.ts): wizer,
// inside j2w, finds its engine cache through it. Written with the umask's mode, the file was
// root's alone, the step's lookup of uid 65534 failed, and every local js build ended with
// "failed to create cache directory: /.cache/wasmtime". Needs root, as the local runtime's builds.
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { ownForSandbox, prepareSandbox } from '@session-relay/builders/sandbox/context'
import { confine } from '@session-relay/builders/sandbox/policy'

const limits = {
  cpuSeconds: 60,
  addressSpaceBytes: 8 * 1024 ** 3,
  fileSizeBytes: 1024 ** 2,
  processes: 512,
  tmpBytes: 16 * 1024 ** 2,
  lowestPriority: false,
}

t.test('under umask 077 the step as 65534 reads its own passwd entry: its home in the cache', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'sandbox-passwd-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const workDir = join(root, 'build')
  const dir = join(workDir, 'functions', 'f')
  const cache = join(root, 'cache')
  const builder = join(root, 'builder')
  await mkdir(dir, { recursive: true })
  await mkdir(join(builder, 'node_modules'), { recursive: true })
  const previous = process.umask(0o077)
  let output = ''
  try {
    const sandbox = await prepareSandbox({
      mode: 'bwrap',
      language: 'js',
      workDir,
      cache,
      rustRoot: '/',
      builderDir: builder,
      nodeModules: join(builder, 'node_modules'),
      preinit: [],
      limits,
    })
    t.teardown(() => sandbox.dispose())
    await ownForSandbox(sandbox, dir, ['home'])
    // What wizer's lookup does: the entry of the uid it runs as, from /etc/passwd.
    const step = confine(
      {
        name: 'probe',
        command: '/bin/sh',
        args: ['-c', 'id -u; getent passwd "$(id -u)"'],
        cwd: dir,
        env: { PATH: '/usr/bin:/bin', HOME: join(cache, 'home') },
        needs: { writesCache: ['home'], readsCache: [], fetchFrom: [] },
      },
      'js',
      sandbox,
    )
    const child = spawn(step.command, step.args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    await new Promise((resolve) => child.on('close', resolve))
  } finally {
    process.umask(previous)
  }
  t.match(output, /^65534\n/, 'the step runs as 65534')
  t.match(output, new RegExp(`^nobody:x:65534:65534:nobody:${join(cache, 'home')}:`, 'm'), 'its home: the cache')
})
