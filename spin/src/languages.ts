// The languages a function may be written in: the API's `language`, the builder's LANGUAGE, the
// build command the generated spin.toml names.
export const LANGUAGES = ['go', 'js', 'ts', 'rust'] as const

export type Language = (typeof LANGUAGES)[number]
