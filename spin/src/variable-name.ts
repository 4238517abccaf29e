// Spin's rule for a variable name (and a component's config key), as Spin checks it
// (spinframework/spin crates/expressions/src/lib.rs, Key::validate): lowercase ASCII letters,
// digits and single underscores, starting with a letter and not ending with an underscore. The
// rule makes `SPIN_VARIABLE_<NAME>` (the name in upper case) one environment variable per name.

/** Why `name` is not a Spin variable name, in Spin's words, or null when it is one. */
function variableNameProblem(name: string): string | null {
  if (name === '') return 'must not be empty'
  if (!/^[a-z0-9_]+$/.test(name)) return 'may contain only lower-case letters, numbers, and underscores'
  if (!/^[a-z]/.test(name)) return 'must start with a lowercase ASCII letter'
  if (!/[a-z0-9]$/.test(name)) return 'must end with a lowercase ASCII letter or digit'
  if (name.includes('__')) return 'must not contain multiple consecutive underscores'
  return null
}

export function isVariableName(name: string): boolean {
  return variableNameProblem(name) === null
}
