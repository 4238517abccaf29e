// The go and rust toolchains of local builds, prepared by the first build that needs them so a
// fresh machine builds every language with no manual step: Go fetched from the Go module proxy
// (go-toolchain.ts), the rust root made by scripts/rust-wasm-root.sh (root only: debootstrap
// and chroot; it installs debootstrap itself). The preparing build says so in its log; a build
// that asks meanwhile waits for the same preparation and reads its progress too. What cannot
// be prepared here is refused before a build is queued, naming the command that would do it.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { ADAPTER_PATH, onPath, toolchainProblem } from '@session-relay/spin/toolchains'
import type { LanguageT } from '../model/resources.js'
import type { GoPin } from './go-toolchain.js'
import { fetchedGoBin, fetchGo, goArch, PINNED_GO, suitableGoOnPath } from './go-toolchain.js'

export type LocalToolchains = {
  /** Why `language` cannot be built here even by preparing it, or null: asked before a build is queued. */
  problem(language: 'go' | 'rust'): string | null
  /** The environment the builder needs for `language`, preparing the toolchain first when missing; progress goes to `write`. */
  prepare(language: LanguageT, write: (line: string) => void): Promise<Record<string, string>>
  /** Stops a preparation under way (its waiting builds fail); nothing half-made is kept. */
  close(): void
}

export type LocalToolchainsDeps = {
  /** The toolchains' directory (PLATFORM_LOCAL_TOOLCHAINS_DIR): {dir}/go, {dir}/rust-wasm. */
  dir: string
  /** Where go, debootstrap and apt-get are looked for, and the PATH the preparation runs with. */
  path: string
  goProxy: string
  isRoot: boolean
  /** RUST_ROOT: set, it is the only root (the builder reads the same), never made here. */
  rustRootSetting: string
  /** A root made before in the checkout (.cache/rust-wasm/current): used when it is there. */
  checkoutRustRoot: string
  /** scripts/rust-wasm-root.sh; absent in the control image. */
  rustScript: string
  goPin?: GoPin
  arch?: string
  /** How often a preparation with no news says it is still going. */
  heartbeatMs?: number
}

type Kind = 'go' | 'rust'
type Preparation = { done: Promise<Record<string, string>>; listeners: Set<(line: string) => void> }

const HEARTBEAT_MS = 15_000

export function localToolchains(deps: LocalToolchainsDeps): LocalToolchains {
  const pin = deps.goPin ?? PINNED_GO
  const arch = goArch(deps.arch)
  const rustCache = join(deps.dir, 'rust-wasm')
  const preparing = new Map<Kind, Preparation>()
  const stop = new AbortController()

  const goReady = (): Record<string, string> | null => {
    if (suitableGoOnPath(deps.path)) return {}
    const bin = fetchedGoBin(deps.dir, pin.version)
    return existsSync(join(bin, 'go')) ? { PATH: `${bin}:${deps.path}` } : null
  }
  const complete = (root: string): boolean =>
    existsSync(join(root, 'usr', 'bin', 'cargo')) && existsSync(join(root, ADAPTER_PATH))
  const rustReady = (): Record<string, string> | null => {
    if (deps.rustRootSetting !== '') return { RUST_ROOT: deps.rustRootSetting }
    for (const root of [deps.checkoutRustRoot, join(rustCache, 'current')])
      if (complete(root)) return { RUST_ROOT: root }
    return null
  }
  const command = `${deps.rustScript} ${rustCache}`

  const problem = (language: Kind): string | null => {
    if (language === 'go') {
      if (goReady() !== null || (arch !== null && pin.sha256[arch] !== undefined)) return null
      return onPath('go', deps.path)
        ? `go builds need Go 1.21 or later: the go on PATH is older, and no Go is pinned for ${process.platform}-${deps.arch ?? process.arch} to fetch (install a newer Go, or build in a cluster)`
        : toolchainProblem('go', { path: deps.path, rustRoot: '' })
    }
    if (deps.rustRootSetting !== '')
      return toolchainProblem('rust', { path: deps.path, rustRoot: deps.rustRootSetting })
    if (rustReady() !== null) return null
    const none = `rust builds need the wasm32 Rust toolchain root: none at ${join(rustCache, 'current')}`
    if (!existsSync(deps.rustScript))
      return toolchainProblem('rust', { path: deps.path, rustRoot: join(rustCache, 'current') })
    if (!deps.isRoot)
      return `${none}, and making it needs root (debootstrap and chroot, about 2 minutes, 1.2 GB): run sudo ${command} once, or start the control plane as root, or build in a cluster`
    if (!onPath('debootstrap', deps.path) && !onPath('apt-get', deps.path))
      return `${none}, and making it needs debootstrap, which is not installed and there is no apt-get to install it: install debootstrap, then run ${command}`
    return null
  }

  const prepareGo = async (say: (line: string) => void): Promise<Record<string, string>> => {
    if (arch === null) throw new Error(problem('go') ?? 'no Go for this machine')
    const bin = await fetchGo({ proxy: deps.goProxy, dir: deps.dir, pin, arch, progress: say, signal: stop.signal })
    return { PATH: `${bin}:${deps.path}` }
  }

  const prepareRust = (say: (line: string) => void): Promise<Record<string, string>> =>
    new Promise((resolve, reject) => {
      say(`making the rust toolchain root with ${command} (once per machine: about 2 minutes, 1.2 GB)`)
      const started = Date.now()
      const child: ChildProcess = spawn(deps.rustScript, [rustCache], {
        env: { PATH: deps.path, HOME: process.env.HOME ?? '/root', LANG: 'C.UTF-8' },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      })
      let last = 'starting'
      let tail: string[] = []
      createInterface({ input: child.stderr! }).on('line', (line) => {
        tail = [...tail.slice(-19), line]
        if (line.startsWith('rust-wasm-root: ')) say((last = line.slice('rust-wasm-root: '.length)))
      })
      child.stdout?.resume()
      // debootstrap runs for a minute or more without a word: the log says it is not stuck.
      const beat = setInterval(
        () => say(`still making the rust toolchain root (${Math.round((Date.now() - started) / 1000)} s): ${last}`),
        deps.heartbeatMs ?? HEARTBEAT_MS,
      )
      const onAbort = (): void => {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM')
      }
      stop.signal.addEventListener('abort', onAbort, { once: true })
      child.once('error', (error) => {
        clearInterval(beat)
        reject(error)
      })
      child.once('close', (code) => {
        clearInterval(beat)
        stop.signal.removeEventListener('abort', onAbort)
        const ready = rustReady()
        if (code === 0 && ready !== null) {
          say(`the rust toolchain root is ready (${Math.round((Date.now() - started) / 1000)} s)`)
          resolve(ready)
          return
        }
        const why = stop.signal.aborted ? 'the control plane stopped' : (tail.at(-1) ?? `exit ${String(code)}`)
        reject(new Error(`making the rust toolchain root failed (${command}): ${why}`))
      })
    })

  return {
    problem,
    async prepare(language, write) {
      if (language !== 'go' && language !== 'rust') return {}
      const ready = language === 'go' ? goReady() : rustReady()
      if (ready !== null) return ready
      const kind: Kind = language
      const line = (text: string): void => write(`toolchain: ${text}\n`)
      let running = preparing.get(kind)
      if (running === undefined) {
        const listeners = new Set([line])
        const say = (text: string): void => {
          for (const listener of listeners) listener(text)
        }
        const done = (kind === 'go' ? prepareGo(say) : prepareRust(say)).finally(() => preparing.delete(kind))
        preparing.set(kind, (running = { done, listeners }))
      } else {
        line(`another build is preparing the ${kind} toolchain: waiting for it`)
        running.listeners.add(line)
      }
      try {
        return await running.done
      } finally {
        running.listeners.delete(line)
      }
    },
    close() {
      stop.abort()
    },
  }
}
