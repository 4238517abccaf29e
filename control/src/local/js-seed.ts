// The machine's js engine seed for local builds (builders/src/js-seed.ts), made once per
// machine and engine by the builder's own program (make-js-seed.js, beside main.js), which
// knows the toolchain it compiles, and kept under the toolchains directory.
// - When: from the control plane's start (`start`, --local-js-seed start, the default), its
//   sandboxed steps at the lowest CPU priority, so that the machine's first js deploy, a little
//   later, finds it made (about 16 CPU-seconds, once; a later start only finds it sound). Or by
//   the first js or ts build that needs one (an application's first, its cache having no home
//   yet; --local-js-seed first-build), at the build's own priority.
// - A build that needs a seed waits for the one being made; later builds of this process are
//   told where it is without waiting. A maker at the start that fails (bubblewrap not yet
//   installed, say: the first build installs it) leaves the next build to try once more.
// - Whatever goes wrong, builds go on: the builder then compiles the engine itself.
// - Stopped with the control plane: the maker is killed, its work in progress removed (its seed
//   appears only whole, so the next start makes it again), and no maker starts after that.
import type { ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { MAKING_NAME } from '@session-relay/common/js-seed-making'
import type { Logger } from '../logger.js'
import { childEnv, startNode, stopChild } from './children.js'

/** The warning of a maker from the start that failed. */
export const NOT_MADE_AT_START = 'no js engine seed at the start: the first js build that needs one tries again'

export type LocalJsSeed = {
  /** Makes the seed now, at the lowest priority, unless one is being made already. */
  start(): void
  /** The builder's environment for a js or ts build into `cache` (its application's dependency cache). */
  prepare(cache: string, write: (line: string) => void): Promise<Record<string, string>>
  close(): Promise<void>
}

export type LocalJsSeedDeps = {
  /** The seeds directory: {toolchains dir}/js-engine-seed. */
  dir: string
  /** The builder's main.js; the seed's maker lives beside it. */
  builder: () => string
  logger: Logger
}

export function localJsSeed(deps: LocalJsSeedDeps): LocalJsSeed {
  // The seed being made (or made): whether it is there now.
  let making: Promise<boolean> | null = null
  // The one `start` began, while it is `making`: a build waiting on it says so.
  let atStart: Promise<boolean> | null = null
  let child: ChildProcess | null = null
  let closed = false
  const listeners = new Set<(line: string) => void>()
  const env = { JS_ENGINE_SEEDS: deps.dir }

  // One from the start runs its steps at the lowest priority.
  const make = (fromStart: boolean): Promise<boolean> =>
    new Promise((resolve) => {
      let program: string
      try {
        program = join(dirname(deps.builder()), 'make-js-seed.js')
      } catch {
        resolve(false)
        return
      }
      if (!existsSync(program)) {
        deps.logger.warn({ program }, 'no js engine seed maker: js builds compile the engine')
        resolve(false)
        return
      }
      const started = Date.now()
      const makerEnv = fromStart ? { ...env, BUILD_LOWEST_PRIORITY: 'true' } : env
      const maker = startNode(program, [], { cwd: dirname(program), env: childEnv(makerEnv) })
      child = maker
      deps.logger.info({ pid: maker.pid, lowestPriority: fromStart }, 'making the js engine seed')
      // The maker's last output, for the warning when it fails: its stdout's lines and its
      // stderr's chunks alike, at most 20 of them whatever it prints.
      const last: string[] = []
      const keep = (text: string): void => {
        last.push(text)
        if (last.length > 20) last.shift()
      }
      // Where it makes the seed, to remove if it is stopped: only a maker's own name in the
      // seeds directory, whatever else the line says.
      let work: string | null = null
      createInterface({ input: maker.stdout! }).on('line', (line) => {
        keep(line)
        const dir = /^working in (.+)$/.exec(line)?.[1]
        if (dir !== undefined && dirname(dir) === deps.dir && MAKING_NAME.test(basename(dir))) work = dir
        if (line.startsWith('not removed ')) deps.logger.warn({ output: line }, 'js engine seed: an old one stays')
        if (/^(making seed|seed |no seed)/.test(line)) for (const listener of listeners) listener(line)
      })
      maker.stderr?.on('data', (chunk: Buffer) => keep(chunk.toString('utf8')))
      maker.once('error', () => resolve(false))
      maker.once('close', (code) => {
        const made = code === 0
        child = null
        const ms = Date.now() - started
        if (closed) deps.logger.info({ ms }, 'js engine seed: the maker stopped with the control plane')
        else if (made) deps.logger.info({ ms }, 'js engine seed ready')
        else
          deps.logger.warn(
            { ms, code, output: last.join('\n') },
            // One from the start is tried again by the first build that needs it (below).
            fromStart ? NOT_MADE_AT_START : 'no js engine seed: js builds compile the engine',
          )
        // A maker that ends removes its work itself; one killed (by close, or the kernel)
        // cannot. Its sandboxed steps die with it (bwrap --die-with-parent), maybe a moment
        // later: a file they write meanwhile leaves a directory not empty, and rm tries again.
        if (work === null) return resolve(made)
        const dir = work
        rm(dir, { recursive: true, force: true, maxRetries: 5 }).then(
          () => resolve(made),
          (error: Error) => {
            deps.logger.warn({ dir, error: error.message }, 'js engine seed: its work stays')
            resolve(made)
          },
        )
      })
    })

  return {
    start() {
      if (closed || making !== null) return
      const started = make(true)
      making = atStart = started
      // Tried once more by the next build that needs it, at that build's priority.
      void started.then((made) => {
        if (!made && making === started) making = null
      })
    },
    async prepare(cache, write) {
      // An application's later builds have its own compiled engine: nothing to wait for.
      if (existsSync(join(cache, 'home'))) return env
      // Stopping: a build still preparing starts no maker the close would not stop.
      if (closed) return env
      if (making === null) {
        write("js engine: preparing the machine's seed (once per machine and componentize-js version)\n")
        making = make(false)
      } else if (making === atStart && child !== null) {
        write("js engine: waiting for the machine's seed, being made since the start at the lowest priority\n")
      }
      const say = (line: string): void => write(`js engine: ${line}\n`)
      listeners.add(say)
      try {
        await making
      } finally {
        listeners.delete(say)
      }
      return env
    },
    async close() {
      closed = true
      if (child !== null) await stopChild(child, 0)
      // Its work removed before the close ends: a next start finds none of it.
      await making
    },
  }
}
