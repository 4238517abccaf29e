// npm run bench:local-worker -- [--duration 5s] [--json]
//
// The js template on one machine (issue 28): the control plane as the compiled binary on its
// embedded defaults (local runtime: the real builder, the worker), one application built from
// the template, then autocannon against a plain Node `http` server answering a short text, the
// application's own URL (publicUrl) and the control plane's invoke, each at concurrency 1 and
// 32, in the same run on the same cores. Figures are ratios to the Node server.
import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { parseDuration } from '@session-relay/common/config/duration'
import { controlApi, poll, spawnLocalControl } from './local-control.js'
import { freePort } from './servers.js'

const argv = process.argv.slice(2)
const durationMs = parseDuration(argv.includes('--duration') ? (argv[argv.indexOf('--duration') + 1] ?? '5s') : '5s')
const asJson = argv.includes('--json')

type Row = {
  target: string
  connections: number
  requestsPerSec: number
  p50Ms: number
  p99Ms: number
  errors: number
  non2xx: number
}

async function measure(target: string, connections: number, options: autocannon.Options): Promise<Row> {
  const result = await autocannon({ ...options, connections, duration: durationMs / 1000 })
  return {
    target,
    connections,
    requestsPerSec: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
  }
}

const dataDir = mkdtempSync(join(tmpdir(), 'bench-local-worker-'))
const port = await freePort()
const control = spawnLocalControl({ dataDir, port, logLevel: 'warn', stdout: 'ignore' })
const node = http.createServer((_request, response) => {
  response.writeHead(200, { 'content-type': 'text/plain' }).end('hello from node\n')
})
try {
  const base = `http://127.0.0.1:${port}`
  await poll('the control plane', 60_000, 250, async () => ((await fetch(`${base}/healthz`)).ok ? true : null))
  const app = await controlApi(base, 'POST', '/applications', { name: 'bench', language: 'js', runtime: 'wasmkube' })
  const fnId = (app.functions as Array<{ id: string }>)[0]?.id as string
  const started = Date.now()
  await controlApi(base, 'POST', `/applications/${String(app.id)}/builds`)
  const deployment = await poll('the build and its first load', 600_000, 250, async () => {
    const view = await controlApi(base, 'GET', `/applications/${String(app.id)}`)
    const current = view.deployment as { ready: boolean; publicUrl: string } | null
    return current?.ready === true ? current : null
  })
  const readyMs = Date.now() - started
  node.listen(0, '127.0.0.1')
  await new Promise((resolve) => node.once('listening', resolve))
  const nodeUrl = `http://127.0.0.1:${(node.address() as AddressInfo).port}/`
  const invoke: autocannon.Options = {
    url: `${base}/api/v1/applications/${String(app.id)}/functions/${fnId}/invoke`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ method: 'GET', path: '/' }),
  }
  const rows: Row[] = []
  for (const connections of [1, 32]) {
    rows.push(await measure('node http', connections, { url: nodeUrl }))
    rows.push(await measure('publicUrl', connections, { url: `${deployment.publicUrl}/` }))
    rows.push(await measure('invoke', connections, invoke))
  }
  const baseline = (connections: number): Row =>
    rows.find((row) => row.target === 'node http' && row.connections === connections) as Row
  const withRatios = rows.map((row) => ({
    ...row,
    rpsRatio: +(row.requestsPerSec / baseline(row.connections).requestsPerSec).toFixed(3),
    p50Ratio: +(row.p50Ms / Math.max(baseline(row.connections).p50Ms, 1)).toFixed(1),
  }))
  if (asJson) {
    process.stdout.write(
      `${JSON.stringify({ cores: cpus().length, durationMs, buildAndFirstLoadMs: readyMs, rows: withRatios }, null, 2)}\n`,
    )
  } else {
    process.stdout.write(`cores ${cpus().length}, ${durationMs} ms per figure; build and first load ${readyMs} ms\n`)
    process.stdout.write(
      '| target | connections | requests/s | x Node | p50 ms | p99 ms | errors | non-2xx |\n|---|---:|---:|---:|---:|---:|---:|---:|\n',
    )
    for (const row of withRatios)
      process.stdout.write(
        `| ${row.target} | ${row.connections} | ${row.requestsPerSec} | ${row.rpsRatio} | ${row.p50Ms} | ${row.p99Ms} | ${row.errors} | ${row.non2xx} |\n`,
      )
  }
} finally {
  node.close()
  control.kill('SIGTERM')
  await new Promise((resolve) => control.once('close', resolve))
  rmSync(dataDir, { recursive: true, force: true })
}
