// The application's functions and their routes: change a route, delete one (confirmed), add one.
import { useState } from 'preact/hooks'
import { messageOf, sendJson } from '../api/client'
import type { Application, FunctionItem } from '../api/types'
import { useAccess } from './access'
import { ErrorText } from './status'

type Fn = Application['functions'][number]

export function FunctionsSection({
  app,
  selected,
  onSelect,
  onChanged,
}: {
  app: Application
  selected: Fn | null
  onSelect: (id: string) => void
  onChanged: () => void
}) {
  const [name, setName] = useState('')
  const [route, setRoute] = useState('')
  const [error, setError] = useState<string | null>(null)
  const { canWrite } = useAccess()
  return (
    <section aria-labelledby="functions">
      <h2 id="functions">Functions</h2>
      <ul class="functions">
        {app.functions.map((fn) =>
          canWrite ? (
            <FunctionRow
              key={fn.id}
              appId={app.id}
              fn={fn}
              selected={fn.id === selected?.id}
              onSelect={onSelect}
              onChanged={onChanged}
            />
          ) : (
            <FunctionView key={fn.id} fn={fn} selected={fn.id === selected?.id} onSelect={onSelect} />
          ),
        )}
      </ul>
      {canWrite && (
        <form
          class="row"
          onSubmit={(event) => {
            event.preventDefault()
            setError(null)
            sendJson<FunctionItem>('POST', `/applications/${app.id}/functions`, {
              name,
              ...(route === '' ? {} : { route }),
            }).then(
              (fn) => {
                setName('')
                setRoute('')
                if (fn !== null) onSelect(fn.id)
                onChanged()
              },
              (e: unknown) => setError(messageOf(e)),
            )
          }}
        >
          <label>
            New function{' '}
            <input
              name="function-name"
              required
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
              autoComplete="off"
            />
          </label>
          <label>
            Route{' '}
            <input
              name="function-route"
              value={route}
              placeholder={name === '' ? '/{name}/...' : `/${name}/...`}
              onInput={(e) => setRoute(e.currentTarget.value)}
              autoComplete="off"
            />
          </label>
          <button type="submit">Add function</button>
        </form>
      )}
      {error !== null && <ErrorText message={error} />}
    </section>
  )
}

/** A function as a read-only caller sees it: its name (to select) and its route, as text. */
function FunctionView({ fn, selected, onSelect }: { fn: Fn; selected: boolean; onSelect: (id: string) => void }) {
  return (
    <li class={selected ? 'selected' : ''}>
      <button type="button" class="link" aria-pressed={selected} onClick={() => onSelect(fn.id)}>
        {fn.name}
      </button>
      <span>
        route <code>{fn.route}</code>
      </span>
    </li>
  )
}

function FunctionRow({
  appId,
  fn,
  selected,
  onSelect,
  onChanged,
}: {
  appId: string
  fn: Fn
  selected: boolean
  onSelect: (id: string) => void
  onChanged: () => void
}) {
  const [route, setRoute] = useState(fn.route)
  const [confirming, setConfirming] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const [saved, setSaved] = useState(false)
  return (
    <li class={selected ? 'selected' : ''}>
      <button type="button" class="link" aria-pressed={selected} onClick={() => onSelect(fn.id)}>
        {fn.name}
      </button>
      <form
        class="inline"
        onSubmit={(event) => {
          event.preventDefault()
          setError(null)
          setSaved(false)
          sendJson('PUT', `/applications/${appId}/functions/${fn.id}`, { route }).then(
            () => {
              setSaved(true)
              onChanged()
            },
            (e: unknown) => setError(messageOf(e)),
          )
        }}
      >
        <label>
          Route of {fn.name}{' '}
          <input
            value={route}
            onInput={(e) => {
              setRoute(e.currentTarget.value)
              setSaved(false)
            }}
          />
        </label>
        <button type="submit" disabled={route === fn.route}>
          Change route
        </button>
        {saved && (
          <span class="ok small" role="status">
            saved
          </span>
        )}
      </form>
      {!confirming && (
        <button type="button" class="danger" onClick={() => setConfirming(true)}>
          Delete<span class="visually-hidden"> function {fn.name}</span>
        </button>
      )}
      {confirming && (
        <span class="confirm" role="group" aria-label={`Confirm deleting function ${fn.name}`}>
          <span>Delete function {fn.name} and its source?</span>
          <button
            type="button"
            class="danger"
            autoFocus
            onClick={() => {
              sendJson('DELETE', `/applications/${appId}/functions/${fn.id}`).then(onChanged, (e: unknown) => {
                setError(messageOf(e))
                setConfirming(false)
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
    </li>
  )
}
