// The Kubernetes manifests in deploy/ as kustomize renders them (test/helpers/manifests.ts),
// checked without a cluster: yamllint, every file a kustomization names exists and every
// manifest file is named, the labels a file gives an object survive the rendering, kinds and apiVersions,
// selectors against pod labels, Service and ServiceMonitor ports against named ports, probes
// against the port each process listens on per its ConfigMap and env (parsed by the processes'
// own settings parsers) and against the paths the real servers serve, the securityContext,
// the shutdown grace period, one public base URL per relay pod routed to that pod, and the build
// pods' NetworkPolicy, rule by rule.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { BlockList, isIPv6 } from 'node:net'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import t from 'tap'
import { SHUTDOWN_TIMEOUT_MS } from '@session-relay/common/lifecycle'
import { BUILD_POD_LABELS } from '@session-relay/control/cluster/build-jobs'
import { parseConfig as parseControlConfig } from '@session-relay/control/config'
import { REGISTRY_TOKEN_ISSUER } from '@session-relay/control/registry/signing-key'
import { parseConfig as parseRelayConfig } from '@session-relay/relay/config'
import { startTestControl } from '../helpers/control.js'
import { buildKustomization, writtenManifests } from '../helpers/manifests.js'
import type { Build, Manifest } from '../helpers/manifests.js'
import { startTestRelay } from '../helpers/relay.js'
import { startRegistry } from '../helpers/registry.js'

const repo = fileURLToPath(new URL('../..', import.meta.url))
const deploy = join(repo, 'deploy')

const KUSTOMIZATIONS = ['base', 'overlays/production', 'overlays/registry']
const ALLOWED_KINDS: Record<string, string[]> = {
  v1: ['Namespace', 'Service', 'ServiceAccount', 'ConfigMap', 'Secret', 'PersistentVolumeClaim'],
  'apps/v1': ['Deployment', 'StatefulSet'],
  'policy/v1': ['PodDisruptionBudget'],
  'rbac.authorization.k8s.io/v1': ['Role', 'RoleBinding'],
  'networking.k8s.io/v1': ['Ingress', 'NetworkPolicy'],
  'monitoring.coreos.com/v1': ['ServiceMonitor'],
}
// Made by the operator, never committed: docs/operations.md says how.
const OPERATOR_SECRETS = ['control-database']
// Stand-ins for what the kubelet fills in, to run the settings parsers on a container's env.
const SECRET_VALUES: Record<string, string> = {
  'control-database/url': 'postgres://user:password@db.example.com:5432/platform',
}

// A process of ours names its Dockerfile (its uid and EXPOSE are checked against it); a
// third-party image names the uid the manifest must run it as.
type Process = {
  dockerfile?: string
  uid?: number
  addressOf: (args: string[], env: Record<string, string>) => number
  publicBaseUrl?: (args: string[], env: Record<string, string>) => string
}
// Which process a container runs, by container name.
const PROCESSES: Record<string, Process> = {
  relay: {
    dockerfile: 'Dockerfile.relay',
    addressOf: (args, env) => parseRelayConfig(args, env).addr.port,
    publicBaseUrl: (args, env) => parseRelayConfig(args, env).publicBaseUrl,
  },
  control: { dockerfile: 'Dockerfile.control', addressOf: (args, env) => parseControlConfig(args, env).addr.port },
  // The distribution registry of overlays/registry: REGISTRY_HTTP_ADDR is host:port or :port.
  registry: {
    uid: 65534,
    addressOf: (_args, env) => Number(/:([0-9]+)$/.exec(env.REGISTRY_HTTP_ADDR ?? '')?.[1] ?? 5000),
  },
}

const builds = new Map<string, Build>(KUSTOMIZATIONS.map((dir) => [dir, buildKustomization(deploy, join(deploy, dir))]))

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [relative(deploy, join(dir, entry.name))],
  )
}

function workloads(build: Build): Manifest[] {
  return build.manifests.filter((m) => m.kind === 'Deployment' || m.kind === 'StatefulSet')
}

/** The label sets of a workload's pods; StatefulSet pods also carry their own name. */
function podLabels(workload: Manifest): Array<Record<string, string>> {
  const labels = workload.spec.template.metadata.labels as Record<string, string>
  if (workload.kind !== 'StatefulSet') return [labels]
  return Array.from({ length: workload.spec.replicas ?? 1 }, (_, ordinal) => ({
    ...labels,
    'statefulset.kubernetes.io/pod-name': `${workload.metadata.name}-${ordinal}`,
  }))
}

function selects(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  return (
    selector !== undefined &&
    Object.keys(selector).length > 0 &&
    Object.entries(selector).every(([key, value]) => labels[key] === value)
  )
}

function selectedWorkloads(build: Build, selector: Record<string, string> | undefined): Manifest[] {
  return workloads(build).filter((workload) => podLabels(workload).some((labels) => selects(selector, labels)))
}

function containers(workload: Manifest): any[] {
  return workload.spec.template.spec.containers
}

/** The container's environment as the kubelet would hand it over for pod `podName`. */
function containerEnv(build: Build, workload: Manifest, container: any, podName: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const source of container.envFrom ?? [])
    Object.assign(env, build.configMaps.get(source.configMapRef?.name) ?? {})
  for (const entry of container.env ?? []) {
    const from = entry.valueFrom
    if (from === undefined)
      env[entry.name] = String(entry.value ?? '').replace(
        /\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g,
        (whole: string, name: string) => env[name] ?? whole,
      )
    else if (from.fieldRef?.fieldPath === 'metadata.name') env[entry.name] = podName
    else if (from.fieldRef?.fieldPath === 'metadata.namespace')
      env[entry.name] = workload.metadata.namespace ?? 'default'
    else if (from.secretKeyRef !== undefined)
      env[entry.name] = SECRET_VALUES[`${from.secretKeyRef.name}/${from.secretKeyRef.key}`] ?? ''
    else if (from.configMapKeyRef !== undefined)
      env[entry.name] = build.configMaps.get(from.configMapKeyRef.name)?.[from.configMapKeyRef.key] ?? ''
  }
  return env
}

function podNames(workload: Manifest): string[] {
  return workload.kind === 'StatefulSet'
    ? Array.from({ length: workload.spec.replicas ?? 1 }, (_, ordinal) => `${workload.metadata.name}-${ordinal}`)
    : [`${workload.metadata.name}-abc12`]
}

function dockerfileUser(dockerfile: string): number {
  const user = /^USER\s+(\d+)/m.exec(readFileSync(join(repo, dockerfile), 'utf8'))
  return user === null ? -1 : Number(user[1])
}

t.test('yamllint passes on deploy/ with the repository config', async (t) => {
  const result = spawnSync('yamllint', ['--strict', '--config-file', join(repo, '.yamllint'), deploy], {
    encoding: 'utf8',
  })
  if (result.error !== undefined) {
    t.fail(`yamllint did not run (${result.error.message}); install it with apt-get install yamllint, as .ci/run does`)
    return
  }
  t.equal(result.status, 0, `yamllint found nothing:\n${result.stdout}${result.stderr}`)
})

t.test('every file a kustomization names exists, and every manifest file is named by one', async (t) => {
  // kustomize refuses a missing file too; this names all of them at once.
  for (const [dir, build] of builds)
    t.same(
      [...build.files].filter((file) => !existsSync(join(deploy, file))),
      [],
      `${dir}: nothing missing`,
    )
  const named = new Set([...builds.values()].flatMap((build) => [...build.files]))
  const unnamed = filesUnder(deploy).filter((file) => !named.has(file))
  t.same(
    unnamed,
    [],
    'no file in deploy/ is left out of every kustomization (a new manifest must be listed to be applied)',
  )
})

t.test('the labels a file gives an object are the labels it is applied with', async (t) => {
  // A transformer of a kustomization (the base's `labels`) replacing a label a file sets leaves
  // that file saying what the cluster never sees.
  for (const [dir, build] of builds) {
    for (const written of writtenManifests(deploy, build.files)) {
      const rendered = build.manifests.find((m) => m.kind === written.kind && m.metadata.name === written.metadata.name)
      if (!t.ok(rendered, `${dir}: ${written.kind} ${written.metadata.name} (${written.source}) is rendered`)) continue
      const changed = Object.entries(written.metadata.labels ?? {}).filter(
        ([label, value]) => rendered?.metadata.labels?.[label] !== value,
      )
      t.same(
        changed,
        [],
        `${dir}: ${written.kind} ${written.metadata.name} keeps the labels ${written.source} gives it`,
      )
    }
  }
})

t.test('kinds and apiVersions are from the allowlist; names are DNS labels', async (t) => {
  for (const [dir, build] of builds) {
    for (const m of build.manifests) {
      t.ok(
        ALLOWED_KINDS[m.apiVersion]?.includes(m.kind),
        `${dir}: ${m.apiVersion} ${m.kind} ${m.metadata.name} is allowed`,
      )
      t.match(m.metadata?.name, /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/, `${dir}: ${m.kind} name ${m.metadata?.name}`)
    }
    const keys = build.manifests.map((m) => `${m.kind}/${m.metadata.name}`)
    t.same(
      keys.filter((key, index) => keys.indexOf(key) !== index),
      [],
      `${dir}: no kind and name twice`,
    )
  }
  const base = builds.get('base')!
  t.notOk(
    base.manifests.some((m) => m.apiVersion.startsWith('monitoring.coreos.com')),
    'the base needs no Prometheus Operator CRDs',
  )
})

t.test('selectors match pod labels, and named ports exist where they are used', async (t) => {
  for (const [dir, build] of builds) {
    for (const workload of workloads(build)) {
      const selector = workload.spec.selector?.matchLabels
      t.ok(
        selects(selector, workload.spec.template.metadata.labels),
        `${dir}: ${workload.kind} ${workload.metadata.name} selects its own pod template`,
      )
    }
    for (const service of build.manifests.filter((m) => m.kind === 'Service')) {
      const targets = selectedWorkloads(build, service.spec.selector)
      t.ok(targets.length > 0, `${dir}: Service ${service.metadata.name} selects some pods`)
      for (const port of service.spec.ports) {
        t.ok(port.name, `${dir}: Service ${service.metadata.name} port ${port.port} has a name`)
        for (const target of targets) {
          const named = containers(target)
            .flatMap((c) => c.ports ?? [])
            .find((p: any) => p.name === port.targetPort || p.containerPort === port.targetPort)
          t.ok(
            named,
            `${dir}: Service ${service.metadata.name} targets port ${port.targetPort}, which ${target.metadata.name} declares`,
          )
        }
      }
    }
    for (const statefulSet of build.manifests.filter((m) => m.kind === 'StatefulSet')) {
      const governing = build.manifests.find(
        (m) => m.kind === 'Service' && m.metadata.name === statefulSet.spec.serviceName,
      )
      t.equal(
        governing?.spec.clusterIP,
        'None',
        `${dir}: StatefulSet ${statefulSet.metadata.name}'s serviceName ${statefulSet.spec.serviceName} is a headless Service`,
      )
      t.ok(
        selectedWorkloads(build, governing?.spec.selector).includes(statefulSet),
        `${dir}: ...and it selects the StatefulSet's pods`,
      )
    }
    for (const pdb of build.manifests.filter((m) => m.kind === 'PodDisruptionBudget')) {
      t.equal(
        selectedWorkloads(build, pdb.spec.selector?.matchLabels).length,
        1,
        `${dir}: PodDisruptionBudget ${pdb.metadata.name} covers one workload`,
      )
    }
    for (const monitor of build.manifests.filter((m) => m.kind === 'ServiceMonitor')) {
      const services = build.manifests.filter(
        (m) => m.kind === 'Service' && selects(monitor.spec.selector?.matchLabels, m.metadata.labels ?? {}),
      )
      t.ok(services.length > 0, `${dir}: ServiceMonitor ${monitor.metadata.name} selects a Service`)
      for (const endpoint of monitor.spec.endpoints) {
        t.ok(
          services.every((s) => s.spec.ports.some((p: any) => p.name === endpoint.port)),
          `${dir}: ServiceMonitor ${monitor.metadata.name} scrapes port ${endpoint.port}, which its Services name`,
        )
      }
    }
    for (const ingress of build.manifests.filter((m) => m.kind === 'Ingress')) {
      for (const rule of ingress.spec.rules) {
        for (const path of rule.http.paths) {
          const backend = path.backend.service
          const service = build.manifests.find((m) => m.kind === 'Service' && m.metadata.name === backend.name)
          t.ok(
            service?.spec.ports.some((p: any) => p.name === backend.port.name),
            `${dir}: Ingress ${rule.host}${path.path} goes to a named port of Service ${backend.name}`,
          )
        }
      }
    }
  }
})

t.test('the control plane: its ServiceAccount, RoleBinding, ConfigMap and Secret', async (t) => {
  const readme = readFileSync(join(repo, 'docs', 'operations.md'), 'utf8')
  for (const [dir, build] of builds) {
    for (const workload of workloads(build)) {
      const account = workload.spec.template.spec.serviceAccountName
      if (account !== undefined)
        t.ok(
          build.manifests.some((m) => m.kind === 'ServiceAccount' && m.metadata.name === account),
          `${dir}: ServiceAccount ${account} of ${workload.metadata.name} exists`,
        )
      for (const container of containers(workload)) {
        for (const source of container.envFrom ?? [])
          t.ok(
            build.configMaps.has(source.configMapRef?.name),
            `${dir}: ConfigMap ${source.configMapRef?.name} of ${container.name} is generated`,
          )
        for (const entry of container.env ?? []) {
          const secret = entry.valueFrom?.secretKeyRef?.name
          if (secret === undefined) continue
          t.ok(
            build.secrets.has(secret) || OPERATOR_SECRETS.includes(secret),
            `${dir}: Secret ${secret} of ${container.name} is generated or made by the operator`,
          )
          if (!build.secrets.has(secret))
            t.ok(
              readme.includes(`create secret generic ${secret}`),
              `docs/operations.md says how to create Secret ${secret}`,
            )
        }
      }
    }
    const control = build.manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === 'control-plane')
    t.equal(
      control?.spec.template.spec.serviceAccountName,
      'control-plane',
      `${dir}: the control plane runs as ServiceAccount control-plane`,
    )
    const binding = build.manifests.find((m) => m.kind === 'RoleBinding' && m.metadata.name === 'control-plane')
    t.match(
      binding,
      {
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'control-plane' },
        subjects: [{ kind: 'ServiceAccount', name: 'control-plane' }],
      },
      `${dir}: RoleBinding control-plane binds Role control-plane to the ServiceAccount`,
    )
    const role = build.manifests.find((m) => m.kind === 'Role' && m.metadata.name === 'control-plane')
    // The Role comes with the Kubernetes-client issue (6), from deploy/base/control/role.yaml.
    // Until that file exists it cannot be listed; once it exists it must be in the build.
    t.equal(
      role !== undefined,
      existsSync(join(deploy, 'base', 'control', 'role.yaml')),
      `${dir}: Role control-plane is in the build exactly when role.yaml exists`,
    )
    const env = containerEnv(build, control!, containers(control!)[0], 'control-plane-abc12')
    t.ok(
      build.configMaps.get('control-settings')?.PLATFORM_OIDC_ISSUER,
      `${dir}: the control plane's issuer comes from its ConfigMap`,
    )
    t.equal(
      parseControlConfig([], env).databaseUrl,
      SECRET_VALUES['control-database/url'],
      `${dir}: PLATFORM_DATABASE_URL comes from the Secret`,
    )
    t.notOk(
      [...build.configMaps.values()].some((data) => JSON.stringify(data).includes('postgres://')),
      `${dir}: no database URL in a ConfigMap`,
    )
  }
})

const probed: Array<{ process: string; path: string; what: string }> = []

t.test('probes and ports: on the port each process listens on, per its ConfigMap, env and args', async (t) => {
  for (const [dir, build] of builds) {
    for (const workload of workloads(build)) {
      for (const container of containers(workload)) {
        const process = PROCESSES[container.name]
        if (!t.ok(process, `${dir}: container ${container.name} runs a known process`)) continue
        const ports = container.ports ?? []
        const dockerfile =
          process!.dockerfile === undefined ? null : readFileSync(join(repo, process!.dockerfile), 'utf8')
        for (const pod of podNames(workload)) {
          const listens = process!.addressOf(container.args ?? [], containerEnv(build, workload, container, pod))
          t.ok(
            ports.some((p: any) => p.containerPort === listens),
            `${dir}: ${pod} listens on ${listens}, a declared containerPort`,
          )
          if (dockerfile !== null)
            t.match(
              dockerfile,
              new RegExp(`^EXPOSE ${listens}$`, 'm'),
              `${dir}: ${process!.dockerfile} exposes ${listens} too`,
            )
        }
        const listens = process!.addressOf(
          container.args ?? [],
          containerEnv(build, workload, container, podNames(workload)[0]!),
        )
        for (const kind of ['readinessProbe', 'livenessProbe']) {
          const probe = container[kind]?.httpGet
          if (!t.ok(probe, `${dir}: ${container.name} has an HTTP ${kind}`)) continue
          const port =
            typeof probe.port === 'number' ? probe.port : ports.find((p: any) => p.name === probe.port)?.containerPort
          t.equal(port, listens, `${dir}: ${container.name}'s ${kind} targets the port it listens on`)
          probed.push({ process: container.name, path: probe.path, what: `${dir}: ${container.name}'s ${kind}` })
        }
      }
    }
    for (const monitor of build.manifests.filter((m) => m.kind === 'ServiceMonitor')) {
      const services = build.manifests.filter(
        (m) => m.kind === 'Service' && selects(monitor.spec.selector?.matchLabels, m.metadata.labels ?? {}),
      )
      for (const service of services) {
        for (const workload of selectedWorkloads(build, service.spec.selector)) {
          for (const endpoint of monitor.spec.endpoints) {
            probed.push({
              process: containers(workload)[0].name,
              path: endpoint.path,
              what: `${dir}: ServiceMonitor ${monitor.metadata.name}`,
            })
          }
        }
      }
    }
  }
  t.ok(probed.length > 0, 'some paths to check')
})

t.test('every probed or scraped path answers 200 from the real process', async (t) => {
  const relay = await startTestRelay(t)
  const control = await startTestControl(t, 'pglite')
  const registry = await startRegistry(t, { auth: true })
  const bases: Record<string, string> = { relay: relay.http, control: control.url, registry: registry.url }
  const seen = new Set<string>()
  for (const { process, path, what } of probed) {
    const key = `${process} ${path}`
    if (seen.has(key)) continue
    seen.add(key)
    const response = await fetch(`${bases[process]}${path}`)
    await response.arrayBuffer()
    t.equal(response.status, 200, `GET ${path} on the ${process} answers 200 (${what})`)
  }
  t.ok(seen.has('relay /healthz') && seen.has('control /healthz'), 'both processes are probed on /healthz')
})

t.test(
  "securityContext: non-root as the image's uid, read-only root, no privilege escalation, no capabilities",
  async (t) => {
    for (const [dir, build] of builds) {
      for (const workload of workloads(build)) {
        const pod = workload.spec.template.spec
        const name = `${dir}: ${workload.metadata.name}`
        t.equal(pod.securityContext?.runAsNonRoot, true, `${name}: runAsNonRoot`)
        t.equal(pod.securityContext?.seccompProfile?.type, 'RuntimeDefault', `${name}: seccomp RuntimeDefault`)
        for (const container of pod.containers) {
          const process = PROCESSES[container.name]!
          const uid = process.dockerfile === undefined ? process.uid : dockerfileUser(process.dockerfile)
          t.equal(
            pod.securityContext?.runAsUser ?? container.securityContext?.runAsUser,
            uid,
            `${name}: runs as uid ${uid} (${process.dockerfile ?? 'the non-root uid chosen for the image'})`,
          )
          t.match(
            container.securityContext,
            {
              runAsNonRoot: true,
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              capabilities: { drop: ['ALL'] },
            },
            `${name}/${container.name}: restrictive securityContext`,
          )
          t.notOk(
            container.securityContext?.privileged || container.securityContext?.capabilities?.add?.length,
            `${name}/${container.name}: not privileged, adds no capability`,
          )
          const tmp = container.volumeMounts?.find((mount: any) => mount.mountPath === '/tmp')
          t.ok(
            pod.volumes?.some((volume: any) => volume.name === tmp?.name && volume.emptyDir !== undefined),
            `${name}/${container.name}: a writable emptyDir /tmp beside the read-only root`,
          )
          t.ok(
            container.resources?.requests?.cpu &&
              container.resources?.requests?.memory &&
              container.resources?.limits?.memory,
            `${name}/${container.name}: cpu and memory requests, a memory limit`,
          )
          t.match(
            container.image,
            new RegExp(`/${container.name}:[^:/]+$`),
            `${name}/${container.name}: image ${container.image} is the ${container.name} image with a tag`,
          )
        }
      }
    }
  },
)

t.test('the relay: shutdown fits the grace period, one public base URL per pod, routed to that pod', async (t) => {
  for (const [dir, build] of builds) {
    const relay = build.manifests.find((m) => m.kind === 'StatefulSet' && m.metadata.name === 'relay')!
    t.ok(relay, `${dir}: the relay is a StatefulSet`)
    const grace = relay.spec.template.spec.terminationGracePeriodSeconds
    const container = containers(relay)[0]
    const { drainTimeoutMs } = parseRelayConfig(
      container.args ?? [],
      containerEnv(build, relay, container, podNames(relay)[0]!),
    )
    const preStopMs = (container.lifecycle?.preStop?.sleep?.seconds ?? 0) * 1000
    t.ok(preStopMs > 0, `${dir}: a preStop sleep lets the endpoints update before the drain`)
    t.ok(
      grace * 1000 > preStopMs + drainTimeoutMs + SHUTDOWN_TIMEOUT_MS,
      `${dir}: terminationGracePeriodSeconds ${grace} outlasts the preStop, the drain (${drainTimeoutMs} ms) and the forced exit (${SHUTDOWN_TIMEOUT_MS} ms), so peers get 1001 before any SIGKILL`,
    )
    t.equal(
      container.resources?.requests?.cpu,
      '1',
      `${dir}: one whole core per relay process, which forwards on one thread`,
    )
    t.equal(
      container.resources?.limits?.cpu,
      undefined,
      `${dir}: no CPU limit to throttle GC threads and the kernel's network work`,
    )
    const urls = podNames(relay).map(
      (pod) =>
        new URL(PROCESSES.relay!.publicBaseUrl!(container.args ?? [], containerEnv(build, relay, container, pod))),
    )
    t.equal(
      new Set(urls.map((url) => url.host)).size,
      urls.length,
      `${dir}: each of ${urls.length} relay pods advertises a host of its own`,
    )
    urls.forEach((url, ordinal) => {
      t.equal(url.protocol, 'wss:', `${dir}: relay-${ordinal} advertises wss://`)
      t.ok(url.host.startsWith(`relay-${ordinal}.`), `${dir}: relay-${ordinal}'s host ${url.host} carries its pod name`)
    })
    const ingresses = build.manifests.filter((m) => m.kind === 'Ingress')
    if (ingresses.length === 0) continue
    urls.forEach((url, ordinal) => {
      const rule = ingresses.flatMap((i) => i.spec.rules).find((r: any) => r.host === url.host)
      const path = rule?.http.paths.find((p: any) => p.path === '/relay/')
      const service = build.manifests.find(
        (m) => m.kind === 'Service' && m.metadata.name === path?.backend.service.name,
      )
      const pods = selectedWorkloads(build, service?.spec.selector)
        .flatMap(podLabels)
        .filter((labels) => selects(service?.spec.selector, labels))
      t.same(
        pods.map((labels) => labels['statefulset.kubernetes.io/pod-name']),
        [`relay-${ordinal}`],
        `${dir}: ${url.host}/relay/ reaches pod relay-${ordinal} and no other`,
      )
      t.equal(
        service?.spec.publishNotReadyAddresses,
        true,
        `${dir}: ${url.host} still reaches relay-${ordinal} while it drains (not ready)`,
      )
    })
  }
})

t.test(
  'overlays/registry: the control plane pushes to the registry by its Service, SpinApps pull it through the NodePort, the Secrets are documented',
  async (t) => {
    const build = builds.get('overlays/registry')!
    const control = build.manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === 'control-plane')!
    const config = parseControlConfig([], containerEnv(build, control, containers(control)[0], 'control-plane-abc12'))
    const service = build.manifests.find((m) => m.kind === 'Service' && m.metadata.name === 'registry')!
    const registry = selectedWorkloads(build, service.spec.selector)
    t.same(
      registry.map((w) => w.metadata.name),
      ['registry'],
      'the registry Service selects the registry pods',
    )
    const port = service.spec.ports[0]
    t.equal(
      config.imageRepository,
      `registry.${service.metadata.namespace}.svc.cluster.local:${port.port}/apps`,
      'builders push to the Service',
    )
    t.equal(
      config.imagePullRepository,
      `localhost:${port.nodePort}/apps`,
      "the nodes' containerd pulls through the NodePort",
    )
    t.equal(config.registryInsecure, true, 'plain HTTP inside the cluster')
    // The control plane is the token server: no shared credential for builds or pods.
    t.equal(config.builderRegistrySecret, '')
    t.equal(config.imagePullSecret, '')
    const keyMount = containers(control)[0].volumeMounts.find((m: any) =>
      config.registryTokenKey.startsWith(`${m.mountPath}/`),
    )
    t.match(
      control.spec.template.spec.volumes.find((v: any) => v.name === keyMount?.name),
      {
        secret: {
          secretName: 'registry-token',
          items: [{ key: 'token.pem', path: config.registryTokenKey.split('/').pop() }],
        },
      },
      "the control plane's token key from its Secret",
    )
    const container = containers(registry[0]!)[0]
    const env = containerEnv(build, registry[0]!, container, 'registry-abc12')
    t.match(
      env,
      {
        REGISTRY_AUTH: 'token',
        REGISTRY_AUTH_TOKEN_SERVICE: config.registryTokenService,
        REGISTRY_AUTH_TOKEN_ISSUER: REGISTRY_TOKEN_ISSUER,
        REGISTRY_AUTH_TOKEN_REALM: /\/registry\/token$/,
      },
      "the registry trusts the control plane's tokens",
    )
    const authDir = (env.REGISTRY_AUTH_TOKEN_ROOTCERTBUNDLE ?? '').replace(/\/[^/]+$/, '')
    const mount = container.volumeMounts.find((m: any) => m.mountPath === authDir)
    t.match(
      registry[0]!.spec.template.spec.volumes.find((v: any) => v.name === mount?.name),
      { secret: { secretName: 'registry-token', items: [{ key: 'token.crt' }] } },
      'only the certificate, not the key, in the registry',
    )
    const storage = container.volumeMounts.find(
      (m: any) => m.mountPath === env.REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY,
    )
    const claim = registry[0]!.spec.template.spec.volumes.find((v: any) => v.name === storage?.name)
      ?.persistentVolumeClaim?.claimName
    t.ok(
      build.manifests.some((m) => m.kind === 'PersistentVolumeClaim' && m.metadata.name === claim),
      'images on the PersistentVolumeClaim',
    )
    const docs = readFileSync(join(repo, 'docs', 'control-plane.md'), 'utf8')
    for (const secret of ['registry-token', 'control-database'])
      t.ok(docs.includes(`create secret generic ${secret}`), `docs/control-plane.md says how to create ${secret}`)
  },
)

// What the build pods' NetworkPolicy lets out, evaluated as a CNI would: a destination of
// `rule.to` (an ipBlock: in its cidr and none of its excepts) on one of `rule.ports`.
function ipBlockAllows(policy: Manifest, address: string, port: number, protocol: string): boolean {
  const family = isIPv6(address) ? 'ipv6' : 'ipv4'
  return (policy.spec.egress ?? []).some((rule: any) => {
    const ports = rule.ports ?? []
    if (ports.length > 0 && !ports.some((p: any) => p.port === port && (p.protocol ?? 'TCP') === protocol)) return false
    return (rule.to ?? []).some((peer: any) => {
      if (peer.ipBlock === undefined) return false
      const within = new BlockList()
      const [cidr, bits] = peer.ipBlock.cidr.split('/')
      if (isIPv6(cidr) !== (family === 'ipv6')) return false
      within.addSubnet(cidr, Number(bits), family)
      const excepted = new BlockList()
      for (const except of peer.ipBlock.except ?? []) {
        const [net, prefix] = except.split('/')
        excepted.addSubnet(net, Number(prefix), isIPv6(net) ? 'ipv6' : 'ipv4')
      }
      return within.check(address, family) && !excepted.check(address, family)
    })
  })
}

const ipv4 = (a: number, b: number, c: number, d: number): string => `${a}.${b}.${c}.${d}`
const octet = fc.integer({ min: 0, max: 255 })
// Addresses a build must never reach: loopback, private, carrier-grade NAT, link-local (the
// cloud metadata service), and their IPv6 counterparts.
const FORBIDDEN = fc.oneof(
  fc.tuple(octet, octet, octet).map(([b, c, d]) => ipv4(127, b, c, d)),
  fc.tuple(octet, octet, octet).map(([b, c, d]) => ipv4(10, b, c, d)),
  fc.tuple(fc.integer({ min: 16, max: 31 }), octet, octet).map(([b, c, d]) => ipv4(172, b, c, d)),
  fc.tuple(octet, octet).map(([c, d]) => ipv4(192, 168, c, d)),
  fc.tuple(fc.integer({ min: 64, max: 127 }), octet, octet).map(([b, c, d]) => ipv4(100, b, c, d)),
  fc.tuple(octet, octet).map(([c, d]) => ipv4(169, 254, c, d)),
  fc.constantFrom('::1', 'fd00::1', 'fc12:3456::9', 'fdff:ffff::1', 'fe80::1', 'febf::ffff'),
)

t.test("the build pods' NetworkPolicy: no ingress; egress to DNS, the registry and public HTTPS only", async (t) => {
  for (const [dir, build] of builds) {
    const policies = build.manifests.filter(
      (m) => m.kind === 'NetworkPolicy' && selects(m.spec.podSelector?.matchLabels, BUILD_POD_LABELS),
    )
    if (!t.equal(policies.length, 1, `${dir}: one NetworkPolicy selects the build pods`)) continue
    const policy = policies[0]!
    t.same(
      selectedWorkloads(build, policy.spec.podSelector.matchLabels),
      [],
      `${dir}: it selects no workload of deploy/ (only build pods)`,
    )
    t.same([...policy.spec.policyTypes].sort(), ['Egress', 'Ingress'], `${dir}: it governs both directions`)
    t.same(policy.spec.ingress ?? [], [], `${dir}: no ingress rule: nothing connects to a build pod`)
    const egress = policy.spec.egress as any[]
    t.equal(egress.length, 3, `${dir}: three egress rules`)
    t.same(
      egress[0],
      {
        to: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
            podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
          },
        ],
        ports: [
          { protocol: 'UDP', port: 53 },
          { protocol: 'TCP', port: 53 },
        ],
      },
      `${dir}: DNS, to the cluster's DNS pods only`,
    )
    const registryRule = egress[1]
    t.same(
      registryRule.to,
      [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'registry' } } }],
      `${dir}: the registry's pods in the same namespace`,
    )
    t.same(registryRule.ports, [{ protocol: 'TCP', port: 5000 }], `${dir}: on the registry's port only`)
    const registry = build.manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === 'registry')
    if (registry !== undefined) {
      t.ok(
        podLabels(registry).some((labels) => selects(registryRule.to[0].podSelector.matchLabels, labels)),
        `${dir}: the rule selects the registry Deployment's pods`,
      )
      t.ok(
        containers(registry).some((c) => c.ports.some((p: any) => p.containerPort === registryRule.ports[0].port)),
        `${dir}: on the port the registry listens on`,
      )
    }
    t.same(egress[2].ports, [{ protocol: 'TCP', port: 443 }], `${dir}: the internet on TCP 443 only`)
    t.ok(
      egress[2].to.every((peer: any) => peer.ipBlock !== undefined),
      `${dir}: the internet rule names address blocks, no pods`,
    )
    for (const [address, what] of [
      ['1.1.1.1', 'a public IPv4 address'],
      ['151.101.2.137', 'a public IPv4 address (a crate registry CDN)'],
      ['2606:4700:4700::1111', 'a public IPv6 address'],
    ] as const) {
      t.ok(ipBlockAllows(policy, address, 443, 'TCP'), `${dir}: ${what} on 443`)
      t.notOk(ipBlockAllows(policy, address, 80, 'TCP'), `${dir}: ${what}, not on 80`)
      t.notOk(ipBlockAllows(policy, address, 443, 'UDP'), `${dir}: ${what}, not over UDP`)
    }
    fc.assert(
      fc.property(FORBIDDEN, fc.integer({ min: 1, max: 65535 }), (address, port) => {
        return !ipBlockAllows(policy, address, port, 'TCP') && !ipBlockAllows(policy, address, port, 'UDP')
      }),
      { numRuns: 500 },
    )
    t.pass(`${dir}: no loopback, private, shared or link-local address, v4 or v6, on any port`)
  }
})
