// The benches' command lines: `--json` stands alone, every other flag takes the next word as
// its value. Each bench names its flags and what each does with its value.

/** Applies each `--flag value` through `set[flag]`; returns whether `--json` was given. */
export function readFlags(argv: string[], set: Record<string, (value: string) => void>): { json: boolean } {
  let json = false
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!
    if (flag === '--json') {
      json = true
      continue
    }
    if (!Object.hasOwn(set, flag)) throw new Error(`unknown flag ${flag}`)
    const value = argv[++i]
    if (value === undefined) throw new Error(`missing value for ${flag}`)
    set[flag]!(value)
  }
  return { json }
}
