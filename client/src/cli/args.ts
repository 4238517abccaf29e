// Session ids and slot tokens are 16 random bytes in base64url, 22 characters of
// [A-Za-z0-9_-], and one in 64 begins with '-'. node:util's parseArgs reads such an id as an
// unknown option (`relay session get -Hx...`: "Unknown option '-H'") and refuses it as an
// option's value (`--token -x...`: "ambiguous"), so a command worked for 63 sessions in 64.
// Rewritten before parsing, into the forms parseArgs documents: `--token=-x...`, and the
// positionals from the first such id on after a `--`, in their order.
import { parseArgs } from 'node:util'

export type Options = Record<string, { type: 'string' | 'boolean' }>

/** A session id or slot token that begins with a dash. */
const DASHED_CREDENTIAL = /^-[A-Za-z0-9_-]{21}$/

/** `args` with each dashed id or token where parseArgs takes it for what it is. */
export function withDashedCredentials(args: readonly string[], options: Options): string[] {
  // The caller said where the positionals are.
  if (args.includes('--')) return [...args]
  const kept: string[] = []
  const moved: string[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    const name = arg.startsWith('--') ? arg.slice(2) : ''
    if (Object.hasOwn(options, name)) {
      const value = args[i + 1]
      if (options[name]?.type !== 'string' || value === undefined) kept.push(arg)
      else {
        // Its value, whatever it is: parseArgs judges one that looks like an option.
        kept.push(...(DASHED_CREDENTIAL.test(value) ? [`${arg}=${value}`] : [arg, value]))
        i++
      }
      continue
    }
    if (arg.startsWith('-') && !DASHED_CREDENTIAL.test(arg)) kept.push(arg)
    else if (moved.length > 0 || DASHED_CREDENTIAL.test(arg)) moved.push(arg)
    else kept.push(arg)
  }
  return moved.length === 0 ? kept : [...kept, '--', ...moved]
}

/** parseArgs, strict, with positionals, on `args` as `withDashedCredentials` writes them. */
export function parseCommand<T extends Options>(args: readonly string[], options: T) {
  return parseArgs({ args: withDashedCredentials(args, options), options, strict: true, allowPositionals: true })
}
