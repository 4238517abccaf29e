// What the data plane is built with: the session table, the forwarder and the bounds.
import type { AddressLimiter } from '../http/admission.js'
import type { Metrics } from '../http/metrics.js'
import type { OriginPolicy } from '../http/origins.js'
import type { Logger } from '../logger.js'
import type { SessionTable } from '../session/table.js'
import type { Forwarder } from './forwarding.js'

export type DataPlaneDeps = {
  table: SessionTable
  forwarder: Forwarder
  metrics: Metrics
  logger: Logger
  allowsOrigin: OriginPolicy
  /** -1: no limit of its own (the per-connection backlog still bounds a message). */
  maxFrameSize: number
  maxBacklog: number
  /** Refused attaches per client address; past the limit every attach from it answers 429. */
  attachFailures: AddressLimiter
}
