// The host's settings, flags first (another process starts it), each also an environment variable.
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Setting } from '../../common/src/config/settings.js'
import { anyText, parseBoolean, parseLogLevel, parsePositiveBytes, parseTimerDuration } from '../../common/src/config/settings.js'
import { parseRef } from '../../common/src/spin/ref.js'
import { ALLOWED_RANGES_ENV, parseRanges } from './sandbox/addresses.js'

export type HostConfig = {
  ref: string
  port: number
  host: string
  cacheDir: string
  dockerConfig: string
  insecureRegistry: boolean
  requestTimeoutMs: number
  maxBodyBytes: number
  logLevel: string
  allowPrivateOutbound: string[]
  variablesStdin: boolean
}

function parsePort (text: string): number {
  const port = Number(text)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('a port from 0 to 65535')
  return port
}

export const settings: ReadonlyArray<Setting<HostConfig>> = [
  { key: 'ref', env: 'SPIN_HOST_REF', flag: '--ref', default: '', parse: (text) => { parseRef(text); return text }, help: 'the application: host[:port]/repo[:tag][@digest] or oci-layout:/abs/dir[:tag][@digest]' },
  { key: 'port', env: 'SPIN_HOST_PORT', flag: '--port', default: '0', parse: parsePort, help: 'port to listen on; 0 picks a free one' },
  { key: 'host', env: 'SPIN_HOST_LISTEN_HOST', flag: '--host', default: '127.0.0.1', parse: anyText, help: 'address to listen on' },
  { key: 'cacheDir', env: 'SPIN_HOST_CACHE_DIR', flag: '--cache-dir', default: join(tmpdir(), 'spin-host-cache'), parse: anyText, help: 'where transpiled components are cached by digest' },
  { key: 'dockerConfig', env: 'DOCKER_CONFIG', flag: '--docker-config', default: '', parse: anyText, help: 'directory holding a Docker config.json with pull credentials; empty for none' },
  { key: 'insecureRegistry', env: 'SPIN_HOST_INSECURE_REGISTRY', flag: '--insecure-registry', default: 'false', parse: parseBoolean, help: 'pull over plain http from a registry that is not on loopback' },
  { key: 'requestTimeoutMs', env: 'SPIN_HOST_REQUEST_TIMEOUT', flag: '--request-timeout', default: '30s', parse: parseTimerDuration, help: 'longest a request may take' },
  { key: 'maxBodyBytes', env: 'SPIN_HOST_MAX_BODY', flag: '--max-body', default: '10MiB', parse: parsePositiveBytes, help: 'largest request body passed to a component; a bigger one is answered 413' },
  { key: 'allowPrivateOutbound', env: ALLOWED_RANGES_ENV, flag: '--allow-private-outbound', default: '', parse: parseRanges, help: 'private address ranges (CIDR) functions may reach; none by default' },
  { key: 'variablesStdin', env: 'SPIN_HOST_VARIABLES_STDIN', flag: '--variables-stdin', default: 'false', parse: parseBoolean, help: "read the variables' values as one JSON object from stdin" },
  { key: 'logLevel', env: 'SPIN_HOST_LOG_LEVEL', flag: '--log-level', default: 'info', parse: parseLogLevel, help: "the host's own log level (pino, on stderr)" },
]
