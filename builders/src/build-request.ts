// The build a builder's settings ask for.
import { join } from 'node:path'
import { rustRoot } from '@session-relay/spin/toolchains'
import type { BuildRequest } from './build-app.js'
import type { BuilderConfig } from './config.js'

export function buildRequestOf(config: BuilderConfig, workDir: string, log: (text: string) => void): BuildRequest {
  return {
    archive: config.sourceArchive,
    ref: config.imageRef,
    language: config.language,
    application: config.application,
    buildId: config.buildId,
    dockerConfigDir: config.dockerConfig === '' ? null : config.dockerConfig,
    insecureRegistry: config.insecureRegistry,
    workDir,
    dependencyCache: config.dependencyCache !== '' ? config.dependencyCache : join(workDir, '.deps'),
    rustRoot: rustRoot(config.rustRoot),
    preinitializer: config.preinitializer === '' ? null : config.preinitializer,
    limits: { timeoutMs: config.stepTimeoutMs, maxOutputBytes: config.maxStepOutputBytes },
    sandbox: config.sandbox,
    sandboxLimits: {
      cpuSeconds: config.stepCpuSeconds,
      addressSpaceBytes: config.stepMemoryBytes,
      fileSizeBytes: config.stepFileBytes,
      processes: config.stepProcesses,
      tmpBytes: config.stepTmpBytes,
      lowestPriority: config.lowestPriority,
    },
    log,
  }
}
