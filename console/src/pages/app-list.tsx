// The applications: each with its deployment's state and last build, a form to create one, and
// delete behind a confirmation. The platform's own metrics below.
import { useState } from 'preact/hooks'
import { getJson, messageOf, sendJson } from '../api/client'
import type { Application, ApplicationSummary, Language } from '../api/types'
import { ReadOnlyNotice, useAccess } from '../parts/access'
import { MetricsPanel } from '../parts/metrics'
import { ErrorText, Loading } from '../parts/status'
import { useLoad } from '../parts/use-load'

const LANGUAGES: Language[] = ['go', 'js', 'ts', 'rust']

export function AppList() {
  const list = useLoad(() => getJson<ApplicationSummary[]>('/applications'), [])
  const { canWrite } = useAccess()
  return (
    <>
      <h1>Applications</h1>
      {canWrite ? (
        <CreateForm
          onCreated={(app) => {
            location.hash = `#/apps/${app.id}/code`
          }}
        />
      ) : (
        <ReadOnlyNotice what="the applications" />
      )}
      {list.error !== null && <ErrorText message={list.error} />}
      {list.loading && list.data === null && <Loading what="applications" />}
      {list.data !== null && list.data.length === 0 && (
        <p class="muted">No applications yet{canWrite ? ': create the first one above.' : '.'}</p>
      )}
      {list.data !== null && list.data.length > 0 && (
        <table class="apps">
          <caption class="visually-hidden">Applications</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Language</th>
              <th scope="col">Deployment</th>
              <th scope="col">Last build</th>
              {canWrite && (
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {list.data.map((app) => (
              <AppRow key={app.id} app={app} canDelete={canWrite} onDeleted={list.reload} />
            ))}
          </tbody>
        </table>
      )}
      <section aria-labelledby="overview-metrics">
        <h2 id="overview-metrics">Platform metrics</h2>
        <MetricsPanel path="/overview/metrics" defaultStep="30s" />
      </section>
    </>
  )
}

function AppRow({ app, canDelete, onDeleted }: { app: ApplicationSummary; canDelete: boolean; onDeleted: () => void }) {
  const detail = useLoad(() => getJson<Application>(`/applications/${app.id}`), [app.id])
  const [confirming, setConfirming] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const last = detail.data?.builds[0]
  const deployment = detail.data?.deployment
  return (
    <tr>
      <td data-label="Name">
        <a href={`#/apps/${app.id}/code`}>{app.name}</a>
        {app.tenant !== undefined && (
          <span class="tag" title="tenant">
            {app.tenant}
          </span>
        )}
        {app.description !== '' && <div class="muted small">{app.description}</div>}
      </td>
      <td data-label="Language">{app.language}</td>
      <td data-label="Deployment">
        {detail.data === null ? (
          (detail.error ?? '…')
        ) : deployment === null || deployment === undefined ? (
          <span class="muted">not deployed</span>
        ) : (
          <span class={deployment.ready ? 'ok' : 'warn'}>
            {deployment.ready ? 'ready' : 'not ready'} ({deployment.observedReplicas}/{deployment.replicas})
          </span>
        )}
      </td>
      <td data-label="Last build">
        {detail.data === null ? (
          '…'
        ) : last === undefined ? (
          <span class="muted">none</span>
        ) : (
          <span class={`status-${last.status}`}>{last.status}</span>
        )}
      </td>
      {canDelete && (
        <td class="actions">
          {!confirming && (
            <button type="button" class="danger" onClick={() => setConfirming(true)}>
              Delete<span class="visually-hidden"> {app.name}</span>
            </button>
          )}
          {confirming && (
            <span class="confirm" role="group" aria-label={`Confirm deleting ${app.name}`}>
              <span>Delete {app.name} with its functions, builds and deployment?</span>
              <button
                type="button"
                class="danger"
                disabled={busy}
                autoFocus
                onClick={() => {
                  setBusy(true)
                  sendJson('DELETE', `/applications/${app.id}`).then(onDeleted, (e: unknown) => {
                    setError(messageOf(e))
                    setBusy(false)
                  })
                }}
              >
                Yes, delete
              </button>
              <button type="button" onClick={() => setConfirming(false)}>
                Cancel
              </button>
            </span>
          )}
          {error !== null && <ErrorText message={error} />}
        </td>
      )}
    </tr>
  )
}

function CreateForm({ onCreated }: { onCreated: (app: Application) => void }) {
  // The API takes the caller's only tenant; in several (or, for an admin, none) one must be named.
  const { tenants, allTenants } = useAccess()
  const [tenant, setTenant] = useState('')
  const [name, setName] = useState('')
  const [language, setLanguage] = useState<Language>('js')
  const [description, setDescription] = useState('')
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  return (
    <form
      class="card create"
      onSubmit={(event) => {
        event.preventDefault()
        setBusy(true)
        setError(null)
        sendJson<Application>('POST', '/applications', {
          name,
          language,
          runtime: 'wasmkube',
          ...(description === '' ? {} : { description }),
          ...(tenant === '' ? {} : { tenant }),
        }).then(
          (app) => {
            if (app !== null) onCreated(app)
          },
          (e: unknown) => {
            setError(messageOf(e))
            setBusy(false)
          },
        )
      }}
    >
      <h2>New application</h2>
      <div class="fields">
        <label>
          Name{' '}
          <input
            name="name"
            required
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
            placeholder="hello"
            autoComplete="off"
          />
        </label>
        <label>
          Language
          <select name="language" value={language} onChange={(e) => setLanguage(e.currentTarget.value as Language)}>
            {LANGUAGES.map((l) => (
              <option key={l} value={l}>
                {l}
              </option>
            ))}
          </select>
        </label>
        {tenants.length > 1 && (
          <label>
            Tenant
            <select name="tenant" required value={tenant} onChange={(e) => setTenant(e.currentTarget.value)}>
              <option value="">choose one</option>
              {tenants.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          </label>
        )}
        {tenants.length === 0 && allTenants && (
          <label>
            Tenant{' '}
            <input
              name="tenant"
              required
              value={tenant}
              onInput={(e) => setTenant(e.currentTarget.value)}
              autoComplete="off"
            />
          </label>
        )}
        <label class="grow">
          Description{' '}
          <input name="description" value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create'}
        </button>
      </div>
      <p class="muted small">A name is a DNS label: lowercase letters, digits and "-", starting with a letter.</p>
      {error !== null && <ErrorText message={error} />}
    </form>
  )
}
