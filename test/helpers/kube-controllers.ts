// What acts on the test API server's objects, as in a cluster: Kubernetes' own
// kube-controller-manager (the Job, Deployment, ReplicaSet, TTL-after-finished, namespace
// controllers and the garbage collector) and the real spin-operator, each built by its install
// script (scripts/install-kube-apiserver.sh, scripts/install-spin-operator.sh) and started
// with the API server (test/helpers/kube-apiserver.ts). Only the node is a stand-in
// (test/fixtures/kube-kubelet.ts). Both run as the admin (system:masters): the tests check the
// control plane's permissions, not theirs.
import type { ChildProcess } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeKubeconfig } from './kubeconfig.js'
import { freePort } from './ports.js'
import { poll, startProcess } from './kube-process.js'

const repo = new URL('../../', import.meta.url).pathname

// The controllers the control plane's objects need. Leader election off: one of each runs.
const CONTROLLERS = [
  'job-controller',
  'deployment-controller',
  'replicaset-controller',
  'garbage-collector-controller',
  'ttl-after-finished-controller',
  'namespace-controller',
  // A Service's EndpointSlices from its ready pods' IPs: what the API server's service proxy picks from.
  'endpointslice-controller',
]

/** Where scripts/install-spin-operator.sh puts spin-operator of the version it pins. */
function spinOperatorBin(): string {
  const script = readFileSync(join(repo, 'scripts/install-spin-operator.sh'), 'utf8')
  const version = /^SPIN_OPERATOR_VERSION=(\S+)/m.exec(script)?.[1]
  if (version === undefined) throw new Error('no SPIN_OPERATOR_VERSION in scripts/install-spin-operator.sh')
  return join(repo, '.cache/spin-operator', version, 'bin', 'spin-operator')
}

export type Controllers = {
  log(): string
  /**
   * Freeze spin-operator (SIGSTOP), as a cluster whose operator is down: what it would restore
   * at once (a deleted Service) stays as the test left it. Resolves with the thaw (SIGCONT).
   */
  pauseOperator: () => () => void
}

/** Start both against the server; their processes join `children` (stopped at the file's end). */
export async function startControllers(
  bin: string,
  dir: string,
  server: { url: string; ca: string; adminToken: string },
  children: ChildProcess[],
): Promise<Controllers> {
  const operator = spinOperatorBin()
  for (const path of [join(bin, 'kube-controller-manager'), operator])
    if (!existsSync(path))
      throw new Error(
        `${path} is not built: run scripts/install-kube-apiserver.sh and scripts/install-spin-operator.sh (npm test does)`,
      )
  const kubeconfig = writeKubeconfig(join(dir, 'admin.kubeconfig'), server, { name: 'admin', token: server.adminToken })
  const manager = startProcess(
    join(bin, 'kube-controller-manager'),
    [
      `--kubeconfig=${kubeconfig}`,
      `--controllers=${CONTROLLERS.join(',')}`,
      '--leader-elect=false',
      // No serving: nothing here reads its health or metrics, and a fixed port would collide
      // between test files.
      '--secure-port=0',
      '--v=1',
    ],
    children,
  )
  // spin-operator's webhooks (defaulting and validation) are off by default in v0.6.1 and listen
  // on a fixed port (9443) it has no flag for, so they stay off: the control plane writes
  // SpinApps complete, as the CRD's schema (which the API server enforces) asks.
  const probePort = await freePort()
  const spin = startProcess(
    operator,
    [
      `--kubeconfig=${kubeconfig}`,
      '--metrics-bind-address=0',
      `--health-probe-bind-address=127.0.0.1:${probePort}`,
      '--leader-elect=false',
      '--zap-log-level=info',
    ],
    children,
  )
  await poll(async () => {
    manager.check()
    spin.check()
    return (await fetch(`http://127.0.0.1:${probePort}/readyz`).catch(() => null))?.ok === true
  }, 'spin-operator to be ready')
  return {
    log: () => `kube-controller-manager:\n${manager.log()}\nspin-operator:\n${spin.log()}`,
    pauseOperator: () => {
      spin.child.kill('SIGSTOP')
      return () => spin.child.kill('SIGCONT')
    },
  }
}
