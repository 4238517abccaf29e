// The PromQL behind each metrics series (the README's reference repeats it). Every query sums
// to exactly one series. An application's pods are the ones kube-state-metrics labels with the
// SpinApp's `core.spinkube.dev/app-name`; cAdvisor and span-metric series are joined to them
// on (namespace, pod). `max by (namespace, pod)` keeps the join one-to-one even when two
// kube-state-metrics replicas report the same pod.

/** The label kube-state-metrics gives the pod label `core.spinkube.dev/app-name`. */
const APP_NAME_LABEL = 'label_core_spinkube_dev_app_name'

/** A PromQL string literal: Go's escaping, which JSON's is a subset of. */
const promString = (text: string): string => JSON.stringify(text)

/** A PromQL duration from whole milliseconds: `1m` as `60s`, `1500ms` as `1500ms`. */
const promDuration = (ms: number): string => (ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`)

/**
 * The rate() window for a step: the configured shortest window, widened to twice the step so
 * that every point sees at least two samples and none falls between two windows.
 */
export const rateWindowMs = (stepMs: number, shortestMs: number): number => Math.max(shortestMs, Math.ceil(2 * stepMs))

export type AppSelector = { namespace: string; appName: string }

function appPods({ namespace, appName }: AppSelector): string {
  return `max by (namespace, pod) (kube_pod_labels{namespace=${promString(namespace)}, ${APP_NAME_LABEL}=${promString(appName)}})`
}

// cAdvisor also reports each pod's cgroup as a whole (container="") and its pause container
// (container="POD"); counting those too would count every container twice.
const containers = (namespace: string): string => `namespace=${promString(namespace)}, container!="", container!="POD"`

export function applicationQueries(app: AppSelector, windowMs: number): { cpu: string; memory: string } {
  const window = promDuration(windowMs)
  return {
    cpu: `sum(rate(container_cpu_usage_seconds_total{${containers(app.namespace)}}[${window}]) * on (namespace, pod) group_left () ${appPods(app)})`,
    memory: `sum(container_memory_working_set_bytes{${containers(app.namespace)}} * on (namespace, pod) group_left () ${appPods(app)})`,
  }
}

/** Span status ERROR: what OpenTelemetry's HTTP conventions set for a server's 5xx. */
const ERROR_STATUS = 'STATUS_CODE_ERROR'

export function functionQueries(
  app: AppSelector,
  route: string,
  windowMs: number,
): { requestRate: string; latencyP95: string; errorRate: string } {
  const window = promDuration(windowMs)
  const spans = `namespace=${promString(app.namespace)}, http_route=${promString(route)}`
  const join = `* on (namespace, pod) group_left () ${appPods(app)}`
  return {
    requestRate: `sum(rate(traces_span_metrics_calls_total{${spans}}[${window}]) ${join})`,
    latencyP95: `histogram_quantile(0.95, sum by (le) (rate(traces_span_metrics_duration_milliseconds_bucket{${spans}}[${window}]) ${join}))`,
    // The span-metrics connector makes an error series only once an error happens: until then
    // the rate is 0 wherever there are requests, not missing.
    errorRate:
      `sum(rate(traces_span_metrics_calls_total{${spans}, status_code="${ERROR_STATUS}"}[${window}]) ${join})` +
      ` or 0 * sum(rate(traces_span_metrics_calls_total{${spans}}[${window}]) ${join})`,
  }
}

/** Go's RE2 syntax: every character that means something there, escaped. */
const reEscape = (text: string): string => text.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&')

/**
 * The control plane's own series (control-metrics.ts); probes and scrapes are not the platform's
 * traffic. With `tenants` (not null), only what concerns their applications: the per-tenant series.
 */
export function overviewQueries(
  windowMs: number,
  tenants: string[] | null = null,
): { httpRequestRate: string; buildRate: string } {
  const window = promDuration(windowMs)
  if (tenants !== null) {
    // An empty alternation would match the empty label; a caller always has a tenant here.
    const tenant = `tenant=~${promString(tenants.map(reEscape).join('|'))}`
    return {
      httpRequestRate: `sum(rate(platform_tenant_http_requests_total{${tenant}}[${window}]))`,
      buildRate: `sum(rate(platform_tenant_builds_finished_total{${tenant}}[${window}]))`,
    }
  }
  return {
    httpRequestRate: `sum(rate(platform_http_requests_total{route!~"/metrics|/healthz"}[${window}]))`,
    buildRate: `sum(rate(platform_builds_finished_total[${window}]))`,
  }
}
