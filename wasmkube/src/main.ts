// The process around run(): real streams and environment, Ctrl-C ends a followed stream.
import { run } from './cli.js'

const interrupt = new AbortController()
process.once('SIGINT', () => interrupt.abort())
const code = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: interrupt.signal,
})
process.stdout.write('', () => process.exit(code))
