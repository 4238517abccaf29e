// relay attach --recreate-command: where the session goes on once its relay shuts down. The
// command is the user's (it may create the session with `relay session create` and pass the
// other token on, or read what the other side published); it prints `URL TOKEN` on one line.
import { spawn } from 'node:child_process'
import type { Recreated } from '../connection.js'
import { RelayError } from '../errors.js'

/** More than a URL and a token: the command is printing something else. */
const MAX_OUTPUT_BYTES = 64 * 1024

export function recreateByCommand(command: string, env: NodeJS.ProcessEnv): () => Promise<Recreated> {
  return () =>
    new Promise((resolve, reject) => {
      // stderr passes through: the command's own errors are the user's to read.
      const child = spawn('/bin/sh', ['-c', command], { env, stdio: ['ignore', 'pipe', 'inherit'] })
      let out = ''
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk
        if (out.length > MAX_OUTPUT_BYTES) child.kill()
      })
      child.once('error', (error) => reject(new RelayError('bad_request', `--recreate-command: ${error.message}`)))
      child.once('close', (code) => {
        const [url, token, ...rest] = (out.split('\n')[0] ?? '').trim().split(/\s+/)
        if (code !== 0) return reject(new RelayError('bad_request', `--recreate-command exited ${code}`))
        if (url === undefined || token === undefined || rest.length > 0 || !/^wss?:\/\//.test(url)) {
          return reject(
            new RelayError(
              'bad_request',
              '--recreate-command must print "URL TOKEN" (a ws:// or wss:// URL, a space, the slot token) on its first line',
            ),
          )
        }
        resolve({ url, token })
      })
    })
}
