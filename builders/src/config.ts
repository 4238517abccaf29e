// The builder's settings: the build contract's environment (docs/control-plane.md, "The
// builder contract"), each also a flag for running it by hand.
import type { Setting } from '@session-relay/common/config/settings'
import { anyText, parseBoolean, parseTimerDuration, parsePositiveBytes } from '@session-relay/common/config/settings'
import type { ArtifactRef } from '@session-relay/spin/ref'
import { parseRef } from '@session-relay/spin/ref'
import type { Language } from './languages.js'
import type { SandboxMode } from './sandbox/policy.js'

export type BuilderConfig = {
  sourceArchive: string
  imageRef: ArtifactRef
  application: string
  language: Language
  buildId: string
  dockerConfig: string
  terminationLog: string
  insecureRegistry: boolean
  stepTimeoutMs: number
  maxStepOutputBytes: number
  dependencyCache: string
  rustRoot: string
  preinitializer: string
  sandbox: SandboxMode
  stepCpuSeconds: number
  stepMemoryBytes: number
  stepFileBytes: number
  stepProcesses: number
  stepTmpBytes: number
  lowestPriority: boolean
}

const required =
  (what: string) =>
  (text: string): string => {
    if (text === '') throw new Error(`${what} is required`)
    return text
  }

function parseSandbox(text: string): SandboxMode {
  if (text === 'bwrap' || text === 'pod') return text
  throw new Error('bwrap or pod')
}

function processCount(text: string): number {
  const count = Number(text)
  if (!/^[0-9]+$/.test(text) || count < 16 || count > 65536) throw new Error('a whole number from 16 to 65536')
  return count
}

function parseLanguage(text: string): Language {
  if (text === 'js' || text === 'ts' || text === 'go' || text === 'rust') return text
  throw new Error('one of js, ts, go, rust')
}

export const settings: ReadonlyArray<Setting<BuilderConfig>> = [
  {
    key: 'sourceArchive',
    env: 'SOURCE_ARCHIVE',
    flag: '--source-archive',
    default: '',
    parse: required('the source archive'),
    help: 'the .tar.gz of spin.toml and functions/{name}/... the control plane packed',
  },
  {
    key: 'imageRef',
    env: 'IMAGE_REF',
    flag: '--image-ref',
    default: '',
    parse: (text) => parseRef(required('the image reference')(text)),
    help: 'where to push: host[:port]/repo:tag, or oci-layout:/abs/dir:tag',
  },
  {
    key: 'application',
    env: 'APPLICATION',
    flag: '--application',
    default: '',
    parse: required('the application name'),
    help: "the application's name (for the build log)",
  },
  {
    key: 'language',
    env: 'LANGUAGE',
    flag: '--language',
    default: '',
    parse: parseLanguage,
    help: 'js, ts, go or rust',
  },
  {
    key: 'buildId',
    env: 'BUILD_ID',
    flag: '--build-id',
    default: '',
    parse: required('the build id'),
    help: 'the build id; the tag when IMAGE_REF has none',
  },
  {
    key: 'dockerConfig',
    env: 'DOCKER_CONFIG',
    flag: '--docker-config',
    default: '',
    parse: anyText,
    help: 'directory holding a Docker config.json with the registry credentials; empty for none',
  },
  {
    key: 'terminationLog',
    env: 'TERMINATION_LOG',
    flag: '--termination-log',
    default: '/dev/termination-log',
    parse: anyText,
    help: 'file that receives the pinned reference, or the reason of a failure',
  },
  {
    key: 'insecureRegistry',
    env: 'INSECURE_REGISTRY',
    flag: '--insecure-registry',
    default: 'false',
    parse: parseBoolean,
    help: 'push over plain http to a registry that is not on loopback (loopback always may)',
  },
  {
    key: 'stepTimeoutMs',
    env: 'BUILD_STEP_TIMEOUT',
    flag: '--build-step-timeout',
    default: '10m',
    parse: parseTimerDuration,
    help: 'longest one build step (bundle, componentize, compile) may run',
  },
  {
    key: 'dependencyCache',
    env: 'DEPENDENCY_CACHE',
    flag: '--dependency-cache',
    default: '',
    parse: anyText,
    help: "go and rust: this application's kept dependency cache; empty: fresh",
  },
  {
    key: 'rustRoot',
    env: 'RUST_ROOT',
    flag: '--rust-root',
    default: '',
    parse: anyText,
    help: 'rust: the toolchain root; empty: .cache/rust-wasm/current',
  },
  {
    key: 'preinitializer',
    env: 'JS_PREINITIALIZER',
    flag: '--js-preinitializer',
    default: '',
    parse: anyText,
    help: "js, ts (bwrap): the worker's preinit, run as componentize-js's wizer; empty: wizer's own",
  },
  {
    key: 'sandbox',
    env: 'BUILD_SANDBOX',
    flag: '--build-sandbox',
    default: 'bwrap',
    parse: parseSandbox,
    help: "bwrap: each step in a bubblewrap sandbox; pod: the image's pod is the sandbox",
  },
  {
    key: 'stepCpuSeconds',
    env: 'BUILD_STEP_CPU',
    flag: '--build-step-cpu',
    default: '10m',
    parse: (text) => Math.ceil(parseTimerDuration(text) / 1000),
    help: 'CPU time one process of a step may use (RLIMIT_CPU)',
  },
  {
    key: 'stepMemoryBytes',
    env: 'BUILD_STEP_MEMORY',
    flag: '--build-step-memory',
    default: '128GiB',
    parse: parsePositiveBytes,
    help: 'address space of one process of a step (RLIMIT_AS; V8 reserves ~10GiB per wasm memory)',
  },
  {
    key: 'stepFileBytes',
    env: 'BUILD_STEP_FILE_SIZE',
    flag: '--build-step-file-size',
    default: '1GiB',
    parse: parsePositiveBytes,
    help: 'largest file a step may write (RLIMIT_FSIZE)',
  },
  {
    key: 'stepProcesses',
    env: 'BUILD_STEP_PROCESSES',
    flag: '--build-step-processes',
    default: '512',
    parse: processCount,
    help: "processes of the sandbox's user, uid 65534 (RLIMIT_NPROC)",
  },
  {
    key: 'stepTmpBytes',
    env: 'BUILD_STEP_TMP',
    flag: '--build-step-tmp',
    default: '512MiB',
    parse: parsePositiveBytes,
    help: "size of a step's private /tmp",
  },
  {
    key: 'lowestPriority',
    env: 'BUILD_LOWEST_PRIORITY',
    flag: '--build-lowest-priority',
    default: 'false',
    parse: parseBoolean,
    help: 'every step at the lowest CPU priority (its autogroup and nice 19), behind all else',
  },
  {
    key: 'maxStepOutputBytes',
    env: 'BUILD_STEP_MAX_OUTPUT',
    flag: '--build-step-max-output',
    default: '4MiB',
    parse: parsePositiveBytes,
    help: 'most output one build step may print to the build log',
  },
]
