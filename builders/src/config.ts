// The builder's settings: the build contract's environment (docs/control-plane.md, "The
// builder contract"), each also a flag for running it by hand.
import type { Setting } from '@session-relay/common/config/settings'
import { anyText, parseBoolean, parseTimerDuration, parsePositiveBytes } from '@session-relay/common/config/settings'
import type { ArtifactRef } from '@session-relay/spin/ref'
import { parseRef } from '@session-relay/spin/ref'
import type { Language } from './languages.js'

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
}

const required =
  (what: string) =>
  (text: string): string => {
    if (text === '') throw new Error(`${what} is required`)
    return text
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
    key: 'maxStepOutputBytes',
    env: 'BUILD_STEP_MAX_OUTPUT',
    flag: '--build-step-max-output',
    default: '4MiB',
    parse: parsePositiveBytes,
    help: 'most output one build step may print to the build log',
  },
]
