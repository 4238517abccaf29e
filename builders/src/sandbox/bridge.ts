// Runs inside a fetch step's sandbox, whose network namespace has only loopback: listens on
// 127.0.0.1:{port} and carries each connection to the fetch proxy's Unix socket, for tools that
// speak SOCKS5 only over TCP (Go's net/http, told `HTTPS_PROXY=socks5://127.0.0.1:{port}`), then
// runs the step's command and exits as it does. It opens nothing else: what may be reached is the
// proxy's decision, outside the sandbox.
// Arguments: port socket -- command args...
import { spawn } from 'node:child_process'
import { connect, createServer } from 'node:net'

const [port, socket, separator, command, ...args] = process.argv.slice(2)
if (port === undefined || socket === undefined || separator !== '--' || command === undefined) {
  process.stderr.write('usage: bridge port socket -- command args...\n')
  process.exit(2)
}

const server = createServer((client) => {
  const upstream = connect(socket)
  client.pipe(upstream)
  upstream.pipe(client)
  client.on('error', () => upstream.destroy())
  upstream.on('error', () => client.destroy())
  client.on('close', () => upstream.destroy())
  upstream.on('close', () => client.destroy())
})
server.listen(Number(port), '127.0.0.1', () => {
  const child = spawn(command, args, { stdio: 'inherit' })
  child.on('error', (error) => {
    process.stderr.write(`cannot run ${command}: ${error.message}\n`)
    process.exit(127)
  })
  child.on('close', (code, signal) => process.exit(code ?? (signal === null ? 1 : 128)))
})
