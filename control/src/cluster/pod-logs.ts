// Pod logs from the cluster: finding the pod of a build or an application, waiting for its
// container to start, and reading its log as a stream (pods/log with follow and tailLines),
// which a caller's disconnect ends upstream too.
import type { IncomingMessage } from 'node:http'
import type { V1Pod } from '@kubernetes/client-node'
import { NotFoundError, UnavailableError } from '@session-relay/common/errors'
import type { Kube } from './kube.js'
import { clusterError } from './kube.js'

export type ContainerState = 'waiting' | 'running' | 'terminated'

export function containerState(pod: V1Pod): ContainerState {
  const state = pod.status?.containerStatuses?.[0]?.state
  if (state?.running !== undefined) return 'running'
  if (state?.terminated !== undefined) return 'terminated'
  return 'waiting'
}

function containerName(pod: V1Pod): string {
  return pod.spec?.containers[0]?.name ?? ''
}

/** Pods matching `selector`, newest first. */
export async function listPods(kube: Kube, selector: string): Promise<V1Pod[]> {
  try {
    const list = await kube.core.listNamespacedPod({ namespace: kube.namespace, labelSelector: selector })
    const created = (pod: V1Pod): number => new Date(pod.metadata?.creationTimestamp ?? 0).getTime()
    return [...list.items].sort((a, b) => created(b) - created(a))
  } catch (error) {
    throw clusterError(error, 'list pods')
  }
}

export type LogOptions = { follow: boolean; tailLines?: number | undefined; signal?: AbortSignal }

/** The pod's log as a stream of the API server's answer; mapped errors when it refuses. */
export async function openPodLog(kube: Kube, pod: V1Pod, opts: LogOptions): Promise<IncomingMessage> {
  const name = pod.metadata?.name ?? ''
  const query = new URLSearchParams({ container: containerName(pod), follow: String(opts.follow) })
  if (opts.tailLines !== undefined) query.set('tailLines', String(opts.tailLines))
  let answer: IncomingMessage
  try {
    answer = await kube.request(
      'GET',
      `/api/v1/namespaces/${kube.namespace}/pods/${encodeURIComponent(name)}/log?${query.toString()}`,
      opts.signal !== undefined ? { signal: opts.signal } : {},
    )
  } catch (error) {
    throw clusterError(error, 'get pods/log')
  }
  if (answer.statusCode === 200) return answer
  answer.resume()
  const status = answer.statusCode ?? 500
  if (status === 404) throw new NotFoundError('the pod is gone')
  if (status === 400) throw new UnavailableError('the container has not started yet')
  throw clusterError({ statusCode: status }, 'get pods/log')
}

/** The whole log of a finished pod, keeping the last `limit` bytes. */
export async function readPodLog(kube: Kube, pod: V1Pod, limit: number): Promise<string> {
  const stream = await openPodLog(kube, pod, { follow: false })
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    chunks.push(chunk)
    size += chunk.length
    while (size - (chunks[0]?.length ?? 0) >= limit && chunks.length > 1) size -= (chunks.shift() as Buffer).length
  }
  const all = Buffer.concat(chunks)
  return all.subarray(Math.max(0, all.length - limit)).toString('utf8')
}
