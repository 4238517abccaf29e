// One application: a tab per task (code, build and deploy, invoke, logs, metrics, traces, settings),
// each its own address so a reload or a shared link comes back to it.
import { getJson } from '../api/client'
import type { Application } from '../api/types'
import { ReadOnlyNotice, useAccess } from '../parts/access'
import { BuildPanel } from '../parts/build'
import { CodePanel } from '../parts/code'
import { InvokePanel } from '../parts/invoke'
import { LogPanel } from '../parts/app-log'
import { MetricsPanel } from '../parts/metrics'
import { SettingsPanel } from '../parts/settings'
import { ErrorText, Loading } from '../parts/status'
import { useLoad } from '../parts/use-load'
import { TraceList } from './traces'
import { useState } from 'preact/hooks'

type Fn = Application['functions'][number]
/** What every tab's panel gets: the application, the selected function, and how to reload. */
type TabProps = { app: Application; selected: Fn | null; onSelect: (id: string) => void; onChanged: () => void }

function AppMetrics({ app, selected }: TabProps) {
  return (
    <>
      <section aria-labelledby="app-metrics">
        <h2 id="app-metrics">Application: CPU and memory</h2>
        <MetricsPanel path={`/applications/${app.id}/metrics`} defaultStep="15s" />
      </section>
      {selected !== null && (
        <section aria-labelledby="fn-metrics">
          <h2 id="fn-metrics">Function {selected.name}: requests, latency, errors</h2>
          <MetricsPanel path={`/applications/${app.id}/functions/${selected.id}/metrics`} defaultStep="15s" />
        </section>
      )}
    </>
  )
}

function AppTraces({ app }: TabProps) {
  return (
    <section aria-labelledby="app-traces">
      <h2 id="app-traces">Recent builds and invokes</h2>
      <TraceList appId={app.id} />
    </section>
  )
}

// One entry per tab: a new section of the page is one more.
const TABS: Array<{ id: string; label: string; Panel: (props: TabProps) => preact.JSX.Element }> = [
  { id: 'code', label: 'Functions & code', Panel: CodePanel },
  { id: 'build', label: 'Build & deploy', Panel: BuildPanel },
  { id: 'invoke', label: 'Invoke', Panel: InvokePanel },
  { id: 'logs', label: 'Logs', Panel: LogPanel },
  { id: 'metrics', label: 'Metrics', Panel: AppMetrics },
  { id: 'traces', label: 'Traces', Panel: AppTraces },
  { id: 'settings', label: 'Settings', Panel: SettingsPanel },
]

export function AppPage({ appId, tab }: { appId: string; tab: string }) {
  const app = useLoad(() => getJson<Application>(`/applications/${appId}`), [appId])
  const [fnId, setFnId] = useState<string | null>(null)
  const { canWrite } = useAccess()
  if (app.data === null) {
    return (
      <>
        <p>
          <a href="#/">← Applications</a>
        </p>
        {app.error !== null ? <ErrorText message={app.error} /> : <Loading what="the application" />}
      </>
    )
  }
  const a = app.data
  const selected = a.functions.find((f) => f.id === fnId) ?? a.functions[0] ?? null
  const Panel = TABS.find((t) => t.id === tab)?.Panel
  return (
    <>
      <p>
        <a href="#/">← Applications</a>
      </p>
      <h1>
        {a.name} <span class="tag">{a.language}</span>
        {a.tenant !== undefined && (
          <span class="tag" title="tenant">
            {a.tenant}
          </span>
        )}
      </h1>
      {a.description !== '' && <p class="muted">{a.description}</p>}
      <nav class="tabs" aria-label="Application">
        {TABS.map(({ id, label }) => (
          <a key={id} href={`#/apps/${a.id}/${id}`} aria-current={tab === id ? 'page' : undefined}>
            {label}
          </a>
        ))}
      </nav>
      {!canWrite && <ReadOnlyNotice what="this application" />}
      {app.error !== null && <ErrorText message={app.error} />}
      {Panel !== undefined && <Panel app={a} selected={selected} onSelect={setFnId} onChanged={app.reload} />}
    </>
  )
}
