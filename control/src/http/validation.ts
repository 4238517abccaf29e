// Request validation with TypeBox's compiled checks, and the one-line reason a 400 carries.
// TypeBox reports every failed branch of a schema; the caller needs the first real one, in
// words: the field, and what it should have been (the leaf schema's description when it has
// one, so the rule is written once, in model/resources.ts or http/schemas/, for both the OpenAPI document and errors).
import type { FastifySchemaCompiler } from 'fastify'
import type { TSchema } from 'typebox'
import { Compile } from 'typebox/compile'
import { Value } from 'typebox/value'
import { InvalidInputError } from '@session-relay/common/errors'

type TypeBoxError = {
  keyword: string
  schemaPath: string
  instancePath: string
  params: Record<string, unknown>
  message: string
}

const PART_NAMES: Record<string, string> = {
  body: 'body',
  querystring: 'query parameter',
  params: 'path parameter',
  headers: 'header',
}

export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart, contentType }) => {
  // Binary bodies (archives) are streams the handler reads and checks itself; their schema
  // exists only to describe them in the OpenAPI document.
  if (httpPart === 'body' && contentType !== undefined && contentType !== 'application/json')
    return (value: unknown) => ({ value })
  const check = Compile(schema)
  const part = PART_NAMES[httpPart ?? ''] ?? String(httpPart)
  // Query and path values arrive as text: convert "true" and "200" where booleans and numbers
  // are due. Only there: an invoke's two ids are strings, and converting them cost 3% of it.
  const convert = httpPart !== 'body' && hasNonText(schema)
  return (value: unknown) => {
    const converted = convert ? Value.Convert(schema, value) : value
    if (check.Check(converted)) return { value: converted }
    return { error: new InvalidInputError(describeFailure(schema, part, check.Errors(converted))) }
  }
}

const NON_TEXT = new Set(['number', 'integer', 'boolean', 'null', 'array', 'bigint'])

/** Whether a value of `schema`, or of a schema within it, is anything but text. */
function hasNonText(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return false
  const { type } = schema as { type?: unknown }
  if ((Array.isArray(type) ? type : [type]).some((t) => NON_TEXT.has(String(t)))) return true
  return Object.values(schema).some((inner) =>
    Array.isArray(inner) ? inner.some(hasNonText) : typeof inner === 'object' && hasNonText(inner),
  )
}

// Keywords that only summarise failures reported more precisely elsewhere in the list.
const SUMMARIES = new Set(['anyOf', 'oneOf', 'allOf', 'boolean', 'if', 'then', 'else'])

// Every field's failure at once, one reason per field in the order found, so a caller fixes
// them in one round; a root-level failure (missing or unknown properties) is a reason of its own.
function describeFailure(schema: TSchema, part: string, errors: TypeBoxError[]): string {
  const groups = new Map<string, TypeBoxError[]>()
  errors.forEach((error, index) => {
    const top = error.instancePath.split('/')[1]
    const key = top === undefined ? (SUMMARIES.has(error.keyword) ? '' : `#${index}`) : `/${top}`
    groups.set(key, [...(groups.get(key) ?? []), error])
  })
  const reasons = [...groups.entries()]
    // A group of summaries alone (an extra property's "schema is false") restates a reason given elsewhere.
    .filter(([, group]) => groups.size === 1 || group.some((e) => !SUMMARIES.has(e.keyword)))
    .map(([, group]) => describeOne(schema, part, group))
  return [...new Set(reasons)].join('; ')
}

function describeOne(schema: TSchema, part: string, errors: TypeBoxError[]): string {
  const error = chooseError(errors)
  if (error === undefined) return `invalid ${part}`
  const field = error.instancePath.slice(1).split('/').map(unescapePointer).join('.')
  const subject = field === '' ? part : part === 'body' ? field : `${part} ${field}`
  switch (error.keyword) {
    case 'required': {
      const missing = (error.params.requiredProperties as string[] | undefined) ?? []
      return `${field === '' ? '' : `${subject}: `}missing ${part === 'body' ? 'property' : part} ${missing.join(', ')}`
    }
    case 'additionalProperties': {
      const extra = (error.params.additionalProperties as string[] | undefined) ?? []
      return `${field === '' ? '' : `${subject}: `}unknown ${part === 'body' ? 'property' : part} ${extra.join(', ')}`
    }
    case 'type':
      return `${subject}: expected ${article(String(error.params.type))}`
    case 'pattern':
    case 'format':
    case 'enum':
    case 'const':
    case 'minLength':
    case 'maxLength': {
      const description = leafAt(schema, error.schemaPath)?.description
      if (description !== undefined) return `${subject}: expected ${description}`
      return `${subject} ${error.message}`
    }
    default:
      return `${subject} ${error.message}`
  }
}

// The first real failure; but where it is a union's value, the failure deepest inside it: the
// branch that got furthest is the one the caller meant ({"secretRef": {"name": "Bad"}} is a
// bad Secret name, not a missing "value").
function chooseError(errors: TypeBoxError[]): TypeBoxError | undefined {
  const real = errors.filter((e) => !SUMMARIES.has(e.keyword))
  const first = real[0] ?? errors[0]
  if (first === undefined || !errors.some((e) => e.keyword === 'anyOf' && e.instancePath === first.instancePath))
    return first
  const depth = (e: TypeBoxError): number => e.instancePath.split('/').length
  return real
    .filter((e) => e.instancePath.startsWith(first.instancePath + '/'))
    .reduce((deepest, e) => (depth(e) > depth(deepest) ? e : deepest), first)
}

function article(type: string): string {
  if (type === 'object' || type === 'array' || type === 'integer') return `an ${type}`
  return `a ${type}`
}

function unescapePointer(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~')
}

/** The sub-schema a JSON pointer such as `#/properties/name` names, if any. */
function leafAt(schema: TSchema, pointer: string): { description?: string } | undefined {
  let node: unknown = schema
  for (const token of pointer
    .replace(/^#\/?/, '')
    .split('/')
    .filter((t) => t !== '')) {
    if (typeof node !== 'object' || node === null) return undefined
    node = (node as Record<string, unknown>)[unescapePointer(token)]
  }
  return typeof node === 'object' && node !== null ? node : undefined
}
