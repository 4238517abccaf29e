// What a component instance is given: WASI as Spin gives it to an http component, with
// nothing of the machine in it. No directories (no preopens), no environment, no arguments,
// no working directory, no sockets; stdout and stderr are the application's log; `exit` traps
// the instance instead of ending the host; outgoing HTTP only to the component's
// `allowed_outbound_hosts`, and never to an address the policy refuses (a literal address here,
// a resolved name in address-guard.ts).
import './address-guard.js'
import { isIP } from 'node:net'
import * as shimHttp from '@bytecodealliance/preview2-shim/http'
import { WASIShim } from '@bytecodealliance/preview2-shim/instantiation'
import type { AddressPolicy } from './addresses.js'
import type { OutboundTarget } from './allowed-hosts.js'
import { defaultPort } from './allowed-hosts.js'

type OutgoingRequest = { scheme: () => { tag: string; val?: string } | undefined; authority: () => string | undefined }
type OutgoingHandler = { handle: (request: OutgoingRequest, options: unknown) => unknown }

export type SandboxOptions = {
  componentId: string
  allowed: (target: OutboundTarget) => boolean
  addresses: AddressPolicy
  onRefused: (target: OutboundTarget | null, reason: string) => void
}

function schemeOf (scheme: { tag: string; val?: string } | undefined): string {
  // wasi:http's default when a request names none, as the shim sends it.
  if (scheme === undefined) return 'https'
  if (scheme.tag === 'other') return (scheme.val ?? '').toLowerCase()
  return scheme.tag.toLowerCase()
}

function targetOf (request: OutgoingRequest): OutboundTarget | null {
  const scheme = schemeOf(request.scheme())
  const authority = request.authority() ?? ''
  const match = /^([^:]+)(?::(\d{1,5}))?$/.exec(authority)
  if (match === null) return null
  const port = match[2] === undefined ? defaultPort(scheme) : Number(match[2])
  if (port === undefined || port > 65535) return null
  return { scheme, host: (match[1] as string).toLowerCase(), port }
}

function denied (): never {
  // wasi:http's error-code for a request the host will not send; the generated glue turns a
  // thrown variant into the result's err.
  // eslint-disable-next-line @typescript-eslint/only-throw-error
  throw { tag: 'HTTP-request-denied' }
}

function guardedHttp (options: SandboxOptions): typeof shimHttp {
  const shimHandler = (shimHttp as unknown as { outgoingHandler: OutgoingHandler }).outgoingHandler
  const outgoingHandler: OutgoingHandler = {
    handle (request, requestOptions) {
      const target = targetOf(request)
      if (target === null) {
        options.onRefused(null, 'the request names no host the runtime can check')
        return denied()
      }
      if (!options.allowed(target)) {
        options.onRefused(target, 'not in allowed_outbound_hosts')
        return denied()
      }
      if (isIP(target.host) !== 0 && options.addresses.refused(target.host)) {
        options.onRefused(target, 'an address functions may not reach')
        return denied()
      }
      return shimHandler.handle(request, requestOptions)
    },
  }
  return { ...shimHttp, outgoingHandler } as unknown as typeof shimHttp
}

class InstanceExit extends Error {}

/** The WASI imports of one component, built once and shared by its instances. */
export function sandboxedImports (options: SandboxOptions): Record<string, unknown> {
  const shim = new WASIShim({
    http: guardedHttp(options),
    sandbox: { preopens: {}, env: {}, args: [options.componentId], enableNetwork: false },
  })
  const imports = shim.getImportObject() as Record<string, unknown>
  const environment = {
    getEnvironment: (): Array<[string, string]> => [],
    getArguments: (): string[] => [options.componentId],
    initialCwd: (): string | undefined => undefined,
  }
  const exit = {
    exit: (): never => { throw new InstanceExit(`component ${options.componentId} called exit`) },
    exitWithCode: (code: number): never => { throw new InstanceExit(`component ${options.componentId} called exit(${code})`) },
  }
  return { ...imports, 'wasi:cli/environment': environment, 'wasi:cli/exit': exit }
}
