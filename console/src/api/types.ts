// The API's shapes, read from the types openapi-typescript generates from the control plane's
// own OpenAPI document at build time (schema.d.ts, not committed): when the API changes, the
// console's build fails where it no longer fits.
import type { operations } from './schema'

type Json<R> = R extends { content: { 'application/json': infer J } } ? J : never
type Ok<K extends keyof operations, S extends number> =
  operations[K]['responses'] extends Record<S, infer R> ? Json<R> : never
type Body<K extends keyof operations> = operations[K] extends {
  requestBody: { content: { 'application/json': infer J } }
}
  ? J
  : never

export type ApplicationSummary = Ok<'listApplications', 200>[number] & { tenant?: string }
export type Application = Ok<'getApplication', 200> & { tenant?: string }
export type FunctionItem = Ok<'listFunctions', 200>[number]
export type Source = Ok<'getSource', 200>
export type Build = Ok<'getBuild', 200>
export type InvokeRequest = Body<'invokeFunction'>
export type InvokeResult = Ok<'invokeFunction', 200>
export type Accepted = Ok<'deployApplication', 202>
export type ConsoleConfig = Ok<'getConsoleConfig', 200>
export type Me = Ok<'getMe', 200>
export type Language = Body<'createApplication'>['language']
export type ApplicationPatch = Body<'updateApplication'>
export type ResourcePolicy = Ok<'getResourcePolicy', 200>
export type MetricSeries = { points: Array<[number, number]>; unit: string }
export type Metrics = { range: string; step: string; series: Record<string, MetricSeries> }
export type TraceList = Ok<'listTraces', 200>
export type Trace = Ok<'getTrace', 200>
export type TraceSpan = Trace['spans'][number]
