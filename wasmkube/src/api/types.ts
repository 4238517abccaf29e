// The API's shapes, read from the types openapi-typescript generates from the control plane's
// own OpenAPI document at build time (schema.d.ts, not committed, as for the console): when the
// API changes, wasmkube's build fails where it no longer fits.
import type { operations } from './schema.js'

type Json<R> = R extends { content: { 'application/json': infer J } } ? J : never
type Ok<K extends keyof operations, S extends number> =
  operations[K]['responses'] extends Record<S, infer R> ? Json<R> : never
type Body<K extends keyof operations> = operations[K] extends {
  requestBody?: { content: { 'application/json': infer J } }
}
  ? J
  : never

export type Summary = Ok<'listApplications', 200>[number]
export type Application = Ok<'getApplication', 200>
export type NewApplication = Body<'createApplication'>
export type ApplicationPatch = Body<'updateApplication'>
export type Language = NewApplication['language']
export type Variables = NonNullable<Application['variables']>
export type Concurrency = NonNullable<Application['concurrency']>
export type Build = Ok<'getBuild', 200>
export type StartedBuild = Ok<'startBuild', 202>
export type SourceUpload = Body<'replaceSource'>
export type InvokeRequest = Body<'invokeFunction'>
export type InvokeResult = Ok<'invokeFunction', 200>
export type ResourcePolicy = Ok<'getResourcePolicy', 200>
export type ConsoleConfig = Ok<'getConsoleConfig', 200>
export type TraceList = Ok<'listApplicationTraces', 200>
export type Trace = Ok<'getTrace', 200>
