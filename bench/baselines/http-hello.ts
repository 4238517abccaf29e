// Baseline for the worker: a plain Node `http` server answering a short text, in a process of
// its own (so its CPU is its own and it never shares an event loop with the load generator).
// Argument: the port; prints `ready` once it listens.
import { createServer } from 'node:http'

const port = Number(process.argv[2])
createServer((_request, response) => {
  response.writeHead(200, { 'content-type': 'text/plain' }).end('hello from node\n')
}).listen(port, '127.0.0.1', () => {
  process.stdout.write('ready\n')
})
