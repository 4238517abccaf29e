// The traces the control plane keeps in memory (--traces-kept): the recent ones of every
// application the caller may read, an application's (its Traces tab), and one trace drawn as a
// waterfall. A trace lives in one process's memory: a restart or newer traces drop it.
import { getJson } from '../api/client'
import type { ApplicationSummary, Trace, TraceList as List } from '../api/types'
import { ErrorText, Loading, Notice } from '../parts/status'
import { useLoad } from '../parts/use-load'
import { duration, Waterfall } from '../parts/waterfall'

const when = (iso: string): string => new Date(iso).toLocaleString()

/** Recent traces, newest first; of one application when `appId` is given. */
export function TraceList({ appId }: { appId?: string }) {
  const path = appId === undefined ? '/traces' : `/applications/${appId}/traces`
  const list = useLoad(() => getJson<List>(path), [path])
  // Each trace names its application by id: the caller's applications give their names.
  const apps = useLoad(
    () => (appId === undefined ? getJson<ApplicationSummary[]>('/applications') : Promise.resolve([])),
    [appId],
  )
  const nameOf = (id: string): string => apps.data?.find((app) => app.id === id)?.name ?? id.slice(0, 8)
  return (
    <>
      <p class="row">
        <button type="button" onClick={list.reload} disabled={list.loading}>
          Refresh
        </button>
        {list.data !== null && list.data.kept > 0 && (
          <span class="muted small">The last {list.data.kept} traces of builds and invokes are kept in memory.</span>
        )}
      </p>
      {list.error !== null && <ErrorText message={list.error} />}
      {list.loading && list.data === null && <Loading what="traces" />}
      {list.data !== null && list.data.kept === 0 && (
        <Notice>
          Traces are not kept: the control plane runs with <code>--traces-kept 0</code>.
        </Notice>
      )}
      {list.data !== null && list.data.kept > 0 && list.data.traces.length === 0 && (
        <p class="muted">No traces yet: a build or an invoke makes one.</p>
      )}
      {list.data !== null && list.data.traces.length > 0 && (
        <table class="traces">
          <caption class="visually-hidden">Traces, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Started</th>
              <th scope="col">Request</th>
              {appId === undefined && <th scope="col">Application</th>}
              <th scope="col">Duration</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {list.data.traces.map((trace) => (
              <tr key={trace.traceId} data-trace={trace.traceId}>
                <td>{when(trace.start)}</td>
                <td>
                  <a href={`#/traces/${trace.traceId}`}>{trace.name}</a>
                </td>
                {appId === undefined && (
                  <td>
                    <a href={`#/apps/${trace.appId}/traces`}>{nameOf(trace.appId)}</a>
                  </td>
                )}
                <td>{duration(trace.durationMs)}</td>
                <td class={trace.status === 'error' ? 'status-failed' : 'ok'}>{trace.status}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  )
}

export function TracesPage() {
  return (
    <>
      <h1>Traces</h1>
      <TraceList />
    </>
  )
}

export function TracePage({ traceId }: { traceId: string }) {
  const trace = useLoad(() => getJson<Trace>(`/traces/${traceId}`), [traceId])
  const data = trace.data
  return (
    <>
      <p>
        <a href="#/traces">← Traces</a>
        {data !== null && (
          <>
            {' · '}
            <a href={`#/apps/${data.appId}/traces`}>its application</a>
          </>
        )}
      </p>
      <h1>Trace</h1>
      {trace.error !== null && <ErrorText message={trace.error} />}
      {data === null && trace.error === null && <Loading what="the trace" />}
      {data !== null && (
        <>
          <dl class="facts">
            <dt>trace id</dt>
            <dd>
              <code>{data.traceId}</code>
            </dd>
            <dt>started</dt>
            <dd>{when(data.start)}</dd>
            <dt>duration</dt>
            <dd data-testid="trace-duration">{duration(data.durationMs)}</dd>
            <dt>spans</dt>
            <dd>{data.spans.length}</dd>
          </dl>
          <Waterfall trace={data} />
        </>
      )}
    </>
  )
}
