// The frame-throughput load generator runs in a process of its own, so it never shares an
// event loop with what it measures; this starts one case and reads its one-line result.
import { spawn } from 'node:child_process'
import type { GeneratorCase, GeneratorResult } from './generator-types.js'
import { scriptPath } from './servers.js'

/** Runs one case; a failed run (loss, reordering, a refused connection) rejects with `what` and the generator's reason. */
export function runGenerator(input: GeneratorCase, what: string): Promise<GeneratorResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', scriptPath('./load-generator.js'), JSON.stringify(input)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (chunk) => {
      out += chunk
    })
    child.stderr.on('data', (chunk) => {
      err += chunk
    })
    child.on('exit', (code) => {
      if (code === 0) return resolve(JSON.parse(out) as GeneratorResult)
      reject(new Error(`${what} failed (exit ${code}): ${err.trim()}`))
    })
  })
}
