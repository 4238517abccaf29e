// What the compiled control plane loads: the Kubernetes client (about 980 modules, a second
// of a start) only when a cluster is configured, so the embedded default starts without it.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import t from 'tap'
import { controlProcess, scratchDir } from '../helpers/control-process.js'

const loadedModules = pathToFileURL(fileURLToPath(new URL('../fixtures/loaded-modules.mjs', import.meta.url))).href

// Two control plane starts (PGlite): each about 5 s alone, much longer on a busy machine.
t.setTimeout(240_000)

t.test('the Kubernetes client is loaded only when a cluster is configured', async (t) => {
  const dir = scratchDir(t)
  const run = async (name: string, env: Record<string, string>): Promise<string[]> => {
    const file = join(dir, `${name}.modules`)
    const control = await controlProcess.start(t, [], {
      PLATFORM_DEV_INSECURE_SKIP_AUTH: 'true',
      PLATFORM_ADDR: '127.0.0.1:0',
      PLATFORM_DATA_DIR: join(dir, name),
      // No default kubeconfig may be found: the home is empty, KUBECONFIG unset.
      HOME: dir,
      KUBECONFIG: '',
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${loadedModules}`,
      LOADED_MODULES_MATCH: '/@kubernetes/client-node/',
      LOADED_MODULES_FILE: file,
      ...env,
    })
    const health = await fetch(`http://127.0.0.1:${control.port}/healthz`)
    t.equal(health.status, 200, `${name}: it answers`)
    control.child.kill('SIGTERM')
    t.same(await control.exited, { code: 0, signal: null }, `${name}: stopped`)
    return readFileSync(file, 'utf8').split('\n').filter(Boolean)
  }

  t.same(await run('embedded', {}), [], 'the embedded default: not one module of the client')

  // A cluster whose API server is not there: the start does not wait for it.
  const kubeconfig = join(dir, 'kubeconfig.yaml')
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]',
      'users: [{name: u, user: {token: t}}]',
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
    ].join('\n'),
  )
  const cluster = await run('cluster', { PLATFORM_KUBECONFIG: kubeconfig })
  t.ok(cluster.length > 100, `with a kubeconfig the client is loaded (${cluster.length} modules)`)
})
