// The public address of a deployed application, and the route that makes it answer: a Gateway
// API HTTPRoute or an Ingress (--public-route) to the Service spin-operator makes for the
// SpinApp, owned by the SpinApp. The name in it is the application's name in the cluster: unique
// across tenants (two tenants' "shop" cannot take each other's address), and a valid DNS label
// for the host-based form. Host-based (https://*.fn.example.com): https://{name}.fn.example.com/.
// Path-based (https://fn.example.com): https://fn.example.com/{name}/, the prefix stripped on the
// way in (the HTTPRoute's URLRewrite filter; for an Ingress, ingress-nginx's rewrite-target
// annotation, the only portable-enough choice: other controllers need their own).
import type { ClusterSettings } from './settings.js'
import type { ObjectType } from './applied.js'
import { applyObject, ownedBy } from './applied.js'
import { APPLICATION_LABEL, MANAGED_BY } from './build-jobs.js'
import type { Kube } from './kube.js'

const HTTP_ROUTE: ObjectType = {
  group: 'gateway.networking.k8s.io',
  version: 'v1',
  plural: 'httproutes',
  missing: 'install the Gateway API CRDs, or set --public-route ingress or none',
}
const INGRESS: ObjectType = {
  group: 'networking.k8s.io',
  version: 'v1',
  plural: 'ingresses',
  missing: 'set --public-route httproute or none',
}

/** The Service port spin-operator gives a SpinApp. */
const SERVICE_PORT = 80

type Owner = { apiVersion: string; kind: string; name: string; uid: string }
type Place = { host: string; prefix: string }

/** Where the application answers: host and path prefix ('' for host-based); null without a base URL. */
function placeOf(config: Pick<ClusterSettings, 'publicBaseUrl'>, name: string): Place | null {
  if (config.publicBaseUrl === '') return null
  const base = new URL(config.publicBaseUrl)
  if (base.hostname.startsWith('*.')) return { host: name + base.hostname.slice(1), prefix: '' }
  return { host: base.hostname, prefix: `${base.pathname.replace(/\/+$/, '')}/${name}` }
}

/** deployment.publicUrl: always ending in "/", under which the function's routes answer. */
export function publicUrlFor(config: Pick<ClusterSettings, 'publicBaseUrl'>, name: string): string | null {
  const place = placeOf(config, name)
  if (place === null) return null
  const base = new URL(config.publicBaseUrl)
  return `${base.protocol}//${place.host}${base.port === '' ? '' : `:${base.port}`}${place.prefix}/`
}

function httpRoute(
  config: ClusterSettings,
  app: { id: string; clusterName: string },
  place: Place,
  owner: Owner,
): object {
  const [namespace, gateway] = config.gateway.includes('/') ? config.gateway.split('/') : [undefined, config.gateway]
  const backend = { name: app.clusterName, port: SERVICE_PORT }
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: {
      name: app.clusterName,
      labels: { ...MANAGED_BY, [APPLICATION_LABEL]: app.id },
      ownerReferences: ownedBy(owner),
    },
    spec: {
      parentRefs: [{ name: gateway, ...(namespace !== undefined ? { namespace } : {}) }],
      hostnames: [place.host],
      rules: [
        place.prefix === ''
          ? { matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs: [backend] }
          : {
              matches: [{ path: { type: 'PathPrefix', value: place.prefix } }],
              filters: [
                { type: 'URLRewrite', urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/' } } },
              ],
              backendRefs: [backend],
            },
      ],
    },
  }
}

function ingress(
  config: ClusterSettings,
  app: { id: string; clusterName: string },
  place: Place,
  owner: Owner,
): object {
  const backend = { service: { name: app.clusterName, port: { number: SERVICE_PORT } } }
  const path =
    place.prefix === ''
      ? { path: '/', pathType: 'Prefix', backend }
      : { path: `${place.prefix}(/|$)(.*)`, pathType: 'ImplementationSpecific', backend }
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name: app.clusterName,
      labels: { ...MANAGED_BY, [APPLICATION_LABEL]: app.id },
      ...(place.prefix === ''
        ? {}
        : {
            annotations: {
              'nginx.ingress.kubernetes.io/use-regex': 'true',
              'nginx.ingress.kubernetes.io/rewrite-target': '/$2',
            },
          }),
      ownerReferences: ownedBy(owner),
    },
    spec: {
      ...(config.ingressClass !== '' ? { ingressClassName: config.ingressClass } : {}),
      rules: [{ host: place.host, http: { paths: [path] } }],
    },
  }
}

/** Apply the route --public-route asks for; nothing without a base URL or with --public-route none. */
export async function applyPublicRoute(
  kube: Kube,
  config: ClusterSettings,
  app: { id: string; clusterName: string },
  owner: Owner,
): Promise<void> {
  const place = placeOf(config, app.clusterName)
  if (place === null || config.publicRoute === 'none') return
  if (config.publicRoute === 'httproute')
    await applyObject(kube, HTTP_ROUTE, app.clusterName, httpRoute(config, app, place, owner))
  else await applyObject(kube, INGRESS, app.clusterName, ingress(config, app, place, owner))
}
