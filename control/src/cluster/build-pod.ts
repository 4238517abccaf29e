// What confines a build pod, which runs a tenant's source through compilers: the pod runs as the
// builder images' own non-root uid with no service account token, every capability dropped, no
// privilege escalation and the container runtime's default seccomp filter; the image's root is
// read-only, so the only writable place is an emptyDir /tmp (the builder's work directory,
// dependency caches and HOME), capped like the container's disk, CPU and memory.
// docs/security.md says what each stops; the NetworkPolicy in deploy/ limits its network.
import type {
  V1Container,
  V1PodSecurityContext,
  V1ResourceRequirements,
  V1SecurityContext,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node'
import type { ClusterSettings } from './settings.js'

/** The USER of builders/Dockerfile.{js,go,rust}: a numeric uid, so the kubelet can check runAsNonRoot. */
export const BUILDER_UID = 10001

const TMP_VOLUME = 'tmp'

type BuildResources = Pick<ClusterSettings, 'buildCpu' | 'buildMemory' | 'buildEphemeralStorage'>

export function buildPodSecurityContext(): V1PodSecurityContext {
  return {
    runAsNonRoot: true,
    runAsUser: BUILDER_UID,
    runAsGroup: BUILDER_UID,
    seccompProfile: { type: 'RuntimeDefault' },
  }
}

function buildContainerSecurityContext(): V1SecurityContext {
  return {
    runAsNonRoot: true,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    privileged: false,
    capabilities: { drop: ['ALL'] },
  }
}

/** Requests equal to limits: a build gets what it was promised and never more. */
function buildResources(config: BuildResources): V1ResourceRequirements {
  const resources = {
    cpu: config.buildCpu,
    memory: config.buildMemory,
    'ephemeral-storage': config.buildEphemeralStorage,
  }
  return { requests: resources, limits: { ...resources } }
}

/** The writable /tmp: on the node's disk (a memory medium would count against the memory limit). */
export function buildScratchVolume(config: BuildResources): V1Volume {
  return { name: TMP_VOLUME, emptyDir: { sizeLimit: config.buildEphemeralStorage } }
}

export const buildScratchMount: V1VolumeMount = { name: TMP_VOLUME, mountPath: '/tmp' }

/** The container's confinement, for buildJob to spread into its container. */
export function buildContainerLimits(config: BuildResources): Pick<V1Container, 'securityContext' | 'resources'> {
  return { securityContext: buildContainerSecurityContext(), resources: buildResources(config) }
}
