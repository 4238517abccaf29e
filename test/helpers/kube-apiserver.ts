// A real Kubernetes cluster's control plane for the cluster tests: etcd and kube-apiserver
// (built by scripts/install-kube-apiserver.sh; npm test runs it when the binaries are missing),
// on 127.0.0.1 and free ports, with a throwaway data directory, serving certificates made for
// the run, RBAC on, the CRDs the control plane and deploy/ need (test/fixtures/crds/, as their
// projects publish them) and an audit log of the control plane's requests; then, against it,
// kube-controller-manager and spin-operator (test/helpers/kube-controllers.ts). No kubelet runs:
// a namespace's node is a stand-in the test starts (test/fixtures/kube-kubelet.ts), and the API
// server reaches pods through the node network stand-in (test/helpers/kube-node-network.ts) its
// egress selector dials.
//
// One server per test file (started on first use, stopped when the file ends: its start costs
// seconds); each test gets a namespace of its own (`kubeNamespace`) with the Role and RoleBinding
// of deploy/base/control, a ServiceAccount `control-plane` and a kubeconfig carrying that
// account's token (TokenRequest), so the control plane runs with exactly the shipped Role.
// Setup goes through an admin identity from --token-auth-file (group system:masters).
import type { ChildProcess } from 'node:child_process'
import { execFile } from 'node:child_process'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { IncomingHttpHeaders } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import tap from 'tap'
import type { Test } from 'tap'
import { parse, parseAllDocuments } from 'yaml'
import { writeKubeconfig } from './kubeconfig.js'
import type { NodeNetwork } from './kube-node-network.js'
import { egressSelectorConfiguration, startNodeNetwork } from './kube-node-network.js'
import { freePort } from './ports.js'
import { startControllers } from './kube-controllers.js'
import { poll, startProcess as start, stopProcess } from './kube-process.js'

const repo = new URL('../../', import.meta.url).pathname

/** Where scripts/install-kube-apiserver.sh puts the binaries of the versions it pins (kustomize too). */
export function kubeBinDir(): string {
  const script = readFileSync(join(repo, 'scripts/install-kube-apiserver.sh'), 'utf8')
  const version = /^KUBE_VERSION=(\S+)/m.exec(script)?.[1]
  if (version === undefined) throw new Error('no KUBE_VERSION in scripts/install-kube-apiserver.sh')
  return join(repo, '.cache/kube', version, 'bin')
}

const INSTALL_HINT =
  'kube-apiserver and etcd are not built: run scripts/install-kube-apiserver.sh (Go and the module proxy; several minutes once); npm test does it'

export type KubeAnswer = { status: number; headers: IncomingHttpHeaders; text: string; body: unknown }

export type AuditEvent = {
  verb: string
  user: { username: string }
  objectRef?: { resource?: string; subresource?: string; apiGroup?: string; namespace?: string; name?: string }
  responseStatus?: { code?: number }
  requestURI: string
}

export type KubeApiServer = {
  /** https://127.0.0.1:port */
  url: string
  /** The serving certificate's CA, PEM. */
  ca: string
  /** The admin's bearer token (system:masters), for what `admin` cannot do (a watch). */
  adminToken: string
  /** A request as the admin (system:masters); `body` is sent as JSON unless it is a string or a Buffer. */
  admin(method: string, path: string, body?: unknown, contentType?: string): Promise<KubeAnswer>
  /** The audit log's events so far (requests of service accounts only). */
  audit(): AuditEvent[]
  /** The API server's stderr so far, for a failure's message. */
  log(): string
  /** The pod network the API server's proxy reaches pods through (test/helpers/kube-node-network.ts). */
  network: NodeNetwork
  /** spin-operator frozen until the returned thaw is called (test/helpers/kube-controllers.ts). */
  pauseOperator: () => () => void
}

let shared: Promise<KubeApiServer> | null = null

/** The file's API server, started on first use and stopped when the test file ends. */
export function kubeApiServer(): Promise<KubeApiServer> {
  shared ??= startKubeApiServer(tap)
  return shared
}

/**
 * A server of the test's own, stopped when `t` ends: for a test that changes what is
 * cluster-wide (removes a CRD), which the file's other tests share. Its start costs what the
 * file's server's does (3-5 s idle, 10-15 s at a load of 8).
 */
export function ownKubeApiServer(t: Test): Promise<KubeApiServer> {
  return startKubeApiServer(t)
}

/** Start etcd and kube-apiserver; both stopped and their files deleted when `t` ends. */
async function startKubeApiServer(t: Test): Promise<KubeApiServer> {
  const bin = kubeBinDir()
  if (!existsSync(join(bin, 'kube-apiserver')) || !existsSync(join(bin, 'etcd'))) throw new Error(INSTALL_HINT)
  const dir = mkdtempSync(join(tmpdir(), 'test-kube-apiserver-'))
  const children: ChildProcess[] = []
  // Registered before anything starts: a failed start still stops what did and cleans up.
  t.teardown(async () => {
    for (const child of children.reverse()) await stopProcess(child)
    rmSync(dir, { recursive: true, force: true })
  })
  // A test process ended mid-teardown (tap's timeout signals it) must not leave etcd running.
  process.once('exit', () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })

  const tls = await servingCertificate(dir)
  const accounts = generateKeyPairSync('rsa', { modulusLength: 2048 })
  writeFileSync(join(dir, 'sa.key'), accounts.privateKey.export({ type: 'pkcs8', format: 'pem' }))
  writeFileSync(join(dir, 'sa.pub'), accounts.publicKey.export({ type: 'spki', format: 'pem' }))
  const adminToken = randomBytes(24).toString('base64url')
  writeFileSync(join(dir, 'tokens.csv'), `${adminToken},test-admin,test-admin,"system:masters"\n`, { mode: 0o600 })
  // The control plane's requests (service accounts), as RBAC sees them: what the RBAC test reads.
  writeFileSync(
    join(dir, 'audit-policy.yaml'),
    JSON.stringify({
      apiVersion: 'audit.k8s.io/v1',
      kind: 'Policy',
      omitStages: ['RequestReceived'],
      rules: [{ level: 'Metadata', userGroups: ['system:serviceaccounts'] }, { level: 'None' }],
    }),
  )

  const network = await startNodeNetwork(join(dir, 'node-network.sock'))
  t.teardown(() => network.close())
  writeFileSync(join(dir, 'egress.json'), egressSelectorConfiguration(network.socket))

  const [etcdPort, peerPort, port] = [await freePort(), await freePort(), await freePort()]
  const etcdUrl = `http://127.0.0.1:${etcdPort}`
  const etcd = start(
    join(bin, 'etcd'),
    [
      '--name=test',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=test=http://127.0.0.1:${peerPort}`,
      // Throwaway data: no fsync, which a loaded machine's disk would make the slowest part.
      '--unsafe-no-fsync',
      '--log-level=error',
    ],
    children,
  )
  await poll(async () => {
    etcd.check()
    return (await fetch(`${etcdUrl}/health`).catch(() => null))?.ok === true
  }, 'etcd to be healthy')

  const url = `https://127.0.0.1:${port}`
  const apiserver = start(
    join(bin, 'kube-apiserver'),
    [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${port}`,
      `--tls-cert-file=${tls.cert}`,
      `--tls-private-key-file=${tls.key}`,
      `--cert-dir=${join(dir, 'certs')}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      // The `kubernetes` Service's endpoints would be 127.0.0.1, which Endpoints refuse (loopback).
      '--endpoint-reconciler-type=none',
      // Pods and their proxies are reached through the node network stand-in, as konnectivity
      // reaches them in a cluster: the proxy refuses loopback endpoints, pods have pod IPs.
      `--egress-selector-config-file=${join(dir, 'egress.json')}`,
      `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`,
      `--audit-log-path=${join(dir, 'audit.log')}`,
      // No priority and fairness: its bootstrap configuration is startup work the tests do not need,
      // and nothing here competes for the server.
      '--enable-priority-and-fairness=false',
    ],
    children,
  )

  const admin: KubeApiServer['admin'] = (method, path, body, contentType) =>
    kubeRequest(url, tls.ca, adminToken, method, path, body, contentType)
  await poll(async () => {
    apiserver.check()
    return (await admin('GET', '/readyz').catch(() => null))?.status === 200
  }, 'kube-apiserver to be ready')
  for (const file of [
    'core.spinkube.dev_spinapps.yaml',
    'gateway.networking.k8s.io_httproutes.yaml',
    'monitoring.coreos.com_servicemonitors.yaml',
    'core.spinkube.dev_spinappexecutors.yaml',
  ]) {
    await installCrd(admin, readFileSync(join(repo, 'test/fixtures/crds', file), 'utf8'))
  }
  // The RuntimeClass spin-operator's executor names (its release's spin-runtime-class.yaml, which
  // the operator's install applies): without it the ReplicaSet's pods are refused.
  const runtimeClass = await admin('POST', '/apis/node.k8s.io/v1/runtimeclasses', {
    apiVersion: 'node.k8s.io/v1',
    kind: 'RuntimeClass',
    metadata: { name: 'wasmtime-spin-v2' },
    handler: 'spin',
  })
  if (runtimeClass.status !== 201) throw new Error(`creating the RuntimeClass answered ${runtimeClass.status}`)
  // After the CRDs: the garbage collector and spin-operator find every kind at their start.
  const controllers = await startControllers(bin, dir, { url, ca: tls.ca, adminToken }, children)
  return {
    url,
    ca: tls.ca,
    adminToken,
    admin,
    audit: () => readAudit(join(dir, 'audit.log')),
    log: () => `${apiserver.log()}\n${controllers.log()}`,
    network,
    pauseOperator: controllers.pauseOperator,
  }
}

export type KubeNamespace = {
  server: KubeApiServer
  namespace: string
  /** A kubeconfig of the control plane's identity (the ServiceAccount control-plane of the namespace). */
  kubeconfig: string
  /** The identity's user name, as the audit log names it. */
  user: string
  /** Its bearer token (in the kubeconfig). */
  token: string
}

/**
 * A fresh namespace on the file's API server with what deploy/base/control gives the control
 * plane there: the ServiceAccount, the Role and its RoleBinding. `default` exists too (pods
 * need their ServiceAccount, which a controller manager would have made). Deleted when `t` ends.
 */
export async function kubeNamespace(
  t: Test,
  dir: string,
  prefix = 'apps',
  own?: KubeApiServer,
): Promise<KubeNamespace> {
  const server = own ?? (await kubeApiServer())
  const namespace = `${prefix}-${randomBytes(4).toString('hex')}`
  const must = async (method: string, path: string, body?: unknown): Promise<KubeAnswer> => {
    const answer = await server.admin(method, path, body)
    if (answer.status >= 300) throw new Error(`${method} ${path} answered ${answer.status}: ${answer.text}`)
    return answer
  }
  await must('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } })
  t.teardown(async () => {
    await server.admin('DELETE', `/api/v1/namespaces/${namespace}`)
  })
  // The executor the control plane's SpinApps name, as spin-operator's install has one made in
  // each namespace of apps (its release's spin-operator.shim-executor.yaml).
  await must('POST', `/apis/core.spinkube.dev/v1alpha1/namespaces/${namespace}/spinappexecutors`, {
    apiVersion: 'core.spinkube.dev/v1alpha1',
    kind: 'SpinAppExecutor',
    metadata: { name: 'containerd-shim-spin' },
    spec: {
      createDeployment: true,
      deploymentConfig: { runtimeClassName: 'wasmtime-spin-v2', installDefaultCACerts: true },
    },
  })
  for (const account of ['default', 'control-plane']) {
    await must('POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: account },
    })
  }
  const role = parse(readFileSync(join(repo, 'deploy/base/control/role.yaml'), 'utf8')) as {
    metadata: Record<string, unknown>
  }
  await must('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/roles`, {
    ...role,
    metadata: { ...role.metadata, namespace },
  })
  // As kustomize renders it: the namespace on the object and on its ServiceAccount subject.
  const binding = parse(readFileSync(join(repo, 'deploy/base/control/rolebinding.yaml'), 'utf8')) as {
    metadata: Record<string, unknown>
    subjects: Array<Record<string, unknown>>
  }
  await must('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings`, {
    ...binding,
    metadata: { ...binding.metadata, namespace },
    subjects: binding.subjects.map((subject) =>
      subject.kind === 'ServiceAccount' ? { ...subject, namespace } : subject,
    ),
  })
  const issued = await must('POST', `/api/v1/namespaces/${namespace}/serviceaccounts/control-plane/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 24 * 3600 },
  })
  const token = (issued.body as { status: { token: string } }).status.token
  const kubeconfig = writeKubeconfig(join(dir, 'kubeconfig.yaml'), server, { name: 'control-plane', token }, namespace)
  return { server, namespace, kubeconfig, user: `system:serviceaccount:${namespace}:control-plane`, token }
}

/** A request to the API server with a bearer token, answered in full. */
export function kubeRequest(
  url: string,
  ca: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
  contentType?: string,
): Promise<KubeAnswer> {
  const payload =
    body === undefined
      ? undefined
      : Buffer.isBuffer(body)
        ? body
        : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' }
  if (payload !== undefined) {
    headers['content-type'] = contentType ?? 'application/json'
    // Node sends a DELETE's body without a length otherwise, which breaks the kept-alive connection.
    headers['content-length'] = String(payload.length)
  }
  return new Promise((resolve, reject) => {
    const request = httpsRequest(`${url}${path}`, { method, headers, ca }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        let parsed: unknown = text
        if (response.headers['content-type']?.startsWith('application/json') === true && text !== '')
          parsed = JSON.parse(text)
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text, body: parsed })
      })
      response.on('error', reject)
    })
    request.on('error', reject)
    request.end(payload)
  })
}

async function installCrd(admin: KubeApiServer['admin'], yaml: string): Promise<void> {
  for (const document of parseAllDocuments(yaml)) {
    const crd = document.toJS() as {
      metadata: { name: string }
      spec: { group: string; names: { plural: string }; versions: Array<{ name: string; served: boolean }> }
    } | null
    if (crd === null) continue
    const created = await admin('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
    if (created.status !== 201)
      throw new Error(`installing the CRD ${crd.metadata.name} answered ${created.status}: ${created.text}`)
    // Established: names accepted and served.
    await poll(async () => {
      const current = await admin('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`)
      const conditions =
        (current.body as { status?: { conditions?: Array<{ type: string; status: string }> } }).status?.conditions ?? []
      return conditions.some((c) => c.type === 'Established' && c.status === 'True')
    }, `the CRD ${crd.metadata.name} to be established`)
    // Then each served version is discoverable, and listable: until its storage has initialized
    // the API server answers 429 "storage is (re)initializing", which client-go would retry and
    // @kubernetes/client-node does not.
    const plural = crd.spec.names.plural
    for (const version of crd.spec.versions.filter((v) => v.served)) {
      await poll(
        async () => (await admin('GET', `/apis/${crd.spec.group}/${version.name}`)).status === 200,
        `${crd.spec.group}/${version.name} to be served`,
      )
      await poll(
        async () => (await admin('GET', `/apis/${crd.spec.group}/${version.name}/${plural}?limit=1`)).status === 200,
        `${crd.spec.group}/${version.name} ${plural} to be listable`,
      )
    }
  }
}

function readAudit(path: string): AuditEvent[] {
  if (!existsSync(path)) return []
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as AuditEvent)
}

/** A CA and a serving certificate for 127.0.0.1 and localhost signed by it, with the openssl CLI. */
async function servingCertificate(dir: string): Promise<{ ca: string; cert: string; key: string }> {
  const run = promisify(execFile)
  const path = (name: string): string => join(dir, name)
  writeFileSync(
    path('serving.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n',
  )
  try {
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      path('ca.key'),
      '-out',
      path('ca.crt'),
      '-days',
      '1',
      '-subj',
      '/CN=test-kube-ca',
    ])
    await run('openssl', [
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      path('serving.key'),
      '-out',
      path('serving.csr'),
      '-subj',
      '/CN=127.0.0.1',
    ])
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      path('serving.csr'),
      '-CA',
      path('ca.crt'),
      '-CAkey',
      path('ca.key'),
      '-CAcreateserial',
      '-out',
      path('serving.crt'),
      '-days',
      '1',
      '-extfile',
      path('serving.ext'),
    ])
  } catch (error) {
    throw new Error(`could not make the API server's certificates with the openssl CLI: ${(error as Error).message}`)
  }
  return { ca: readFileSync(path('ca.crt'), 'utf8'), cert: path('serving.crt'), key: path('serving.key') }
}
