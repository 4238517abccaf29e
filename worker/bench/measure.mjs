// Measures the worker by hand (issue 28's figures): a js template component served by the
// worker against a plain Node http server answering a short text, in the same run on the
// same cores; then the worker's RSS idle and with apps loaded, each answering.
//   node worker/bench/measure.mjs --worker PATH --wasm DIR_OR_FILE... [--seconds 10]
// Every --wasm is one application (one component.wasm each); the first one is benchmarked.
// Run from the repository root after `npm ci` (autocannon comes from its node_modules).
import autocannon from 'autocannon'
import { spawn } from 'node:child_process'
import { readFileSync, mkdtempSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'

const args = process.argv.slice(2)
const flag = (name, fallback) => { const i = args.indexOf(name); return i === -1 ? fallback : args[i + 1] }
const wasms = args.flatMap((a, i) => args[i - 1] === '--wasm' ? [a] : [])
const seconds = Number(flag('--seconds', '10'))
const workerPath = flag('--worker')
if (workerPath === undefined || wasms.length === 0) throw new Error('usage: --worker PATH --wasm FILE [--wasm FILE...]')

const status = (pid, field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024
// Anonymous memory is what the worker costs; file pages (the mapped compiled code) are clean
// and shared with the page cache, given back under pressure.
const rssMb = (pid) => ({ rss: Math.round(status(pid, 'VmRSS')), anon: Math.round(status(pid, 'RssAnon')), file: Math.round(status(pid, 'RssFile')) })
const cpuMs = (pid) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return (Number(f[11]) + Number(f[12])) * 10 }

const node = http.createServer((_req, res) => { res.writeHead(200, { 'content-type': 'text/plain' }).end('hello from node\n') })
await new Promise((resolve) => node.listen(0, '127.0.0.1', resolve))
const nodeUrl = `http://127.0.0.1:${node.address().port}/`

const worker = spawn(workerPath, ['--cache-dir', flag('--cache-dir', mkdtempSync(join(tmpdir(), 'worker-cache-')))], { stdio: ['pipe', 'pipe', 'inherit'] })
const replies = new Map()
createInterface({ input: worker.stdout }).on('line', (line) => { const r = JSON.parse(line); replies.get(r.id)?.(r) })
let nextId = 1
const send = (command) => new Promise((resolve) => { const id = nextId++; replies.set(id, resolve); worker.stdin.write(JSON.stringify({ ...command, id }) + '\n') })
const lock = { spin_lock_version: 1, triggers: [{ id: 't', trigger_type: 'http', trigger_config: { component: 'hello', route: '/...' } }], components: [{ id: 'hello', source: { content_type: 'application/wasm' } }] }

await new Promise((resolve) => setTimeout(resolve, 300))
const results = { idleRssMb: rssMb(worker.pid), apps: [] }
const urls = []
for (const [i, wasm] of wasms.entries()) {
  const started = Date.now()
  const reply = await send({ op: 'load', app: `app${i}`, lock, components: { hello: wasm }, limits: { memoryBytes: 128 << 20 } })
  if (!reply.ok) throw new Error(reply.error)
  const loadMs = Date.now() - started
  const first = Date.now()
  const answer = await fetch(reply.url + '/')
  await answer.text()
  urls.push(reply.url)
  results.apps.push({ loadMs, firstAnswerMs: Date.now() - first, rssMb: rssMb(worker.pid) })
}

async function run (url, connections) {
  const r = await autocannon({ url, connections, duration: seconds, pipelining: 1 })
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx }
}
if (args.includes('--no-bench')) {
  console.log(JSON.stringify(results, null, 2))
  worker.stdin.end()
  node.close()
  process.exit(0)
}
await run(urls[0], 1) // warm-up

// autocannon's percentiles are whole milliseconds: p50 at concurrency 1 is timed here, one
// request after the other on a kept-alive connection.
async function sequentialP50 (url, count) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const times = []
  for (let i = 0; i < count; i++) {
    const started = process.hrtime.bigint()
    await new Promise((resolve, reject) => {
      http.get(url, { agent }, (res) => { res.resume(); res.on('end', resolve) }).on('error', reject)
    })
    times.push(Number(process.hrtime.bigint() - started) / 1e6)
  }
  agent.destroy()
  times.sort((a, b) => a - b)
  return { p50: times[Math.floor(count / 2)], p99: times[Math.floor(count * 0.99)] }
}
const sequential = {}
for (const round of [1, 2]) {
  sequential[`worker${round}`] = await sequentialP50(urls[0] + '/', 2000)
  sequential[`node${round}`] = await sequentialP50(nodeUrl, 2000)
}
results.sequentialMs = sequential
const bench = {}
for (const connections of [1, 32]) {
  const cpuBefore = cpuMs(worker.pid)
  const w = await run(urls[0] + '/', connections)
  w.cpuMsPerRequest = (cpuMs(worker.pid) - cpuBefore) / (w.rps * seconds)
  const n = await run(nodeUrl, connections)
  bench[`c${connections}`] = { worker: w, node: n, p50Ratio: w.p50 / Math.max(n.p50, 0.001), rpsRatio: w.rps / n.rps }
}
results.bench = bench
results.rssAfterBenchMb = rssMb(worker.pid)
console.log(JSON.stringify(results, null, 2))
worker.stdin.end()
node.close()
