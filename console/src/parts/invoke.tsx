// Send one HTTP request to a deployed function and show its answer: status, headers, body
// (pretty JSON when it is JSON; base64 said as such), duration, and whether it was cut.
import { useState } from 'preact/hooks'
import { messageOf, sendJson } from '../api/client'
import type { Application, InvokeRequest, InvokeResult } from '../api/types'
import { useAccess } from './access'
import { ErrorText } from './status'

type Fn = Application['functions'][number]

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']

/** A route's fixed part as a path to call: "/hello/..." -> "/hello". */
const pathOf = (route: string): string => route.replace(/\/?\.\.\.$/, '') || '/'

function parseHeaders(text: string): Record<string, string[]> {
  const headers: Record<string, string[]> = {}
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue
    const colon = line.indexOf(':')
    if (colon <= 0) throw new Error(`Invalid input: header line "${line}" is not "Name: value"`)
    const name = line.slice(0, colon).trim().toLowerCase()
    ;(headers[name] ??= []).push(line.slice(colon + 1).trim())
  }
  return headers
}

function base64Of(bytes: Uint8Array): string {
  let text = ''
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(text)
}

function prettyBody(result: InvokeResult): { text: string; kind: string } {
  if (result.bodyIsBase64) return { text: result.body, kind: 'base64 (binary body)' }
  const type = result.headers['content-type']?.[0] ?? ''
  try {
    if (/json/i.test(type) || /^\s*[[{]/.test(result.body))
      return { text: JSON.stringify(JSON.parse(result.body), null, 2), kind: 'JSON' }
  } catch {}
  return { text: result.body, kind: 'text' }
}

export function InvokePanel({
  app,
  selected,
  onSelect,
}: {
  app: Application
  selected: Fn | null
  onSelect: (id: string) => void
}) {
  const [method, setMethod] = useState('GET')
  const [path, setPath] = useState<string | null>(null)
  const [headers, setHeaders] = useState('')
  const [body, setBody] = useState('')
  const [file, setFile] = useState<{ name: string; base64: string; size: number } | null>(null)
  const [result, setResult] = useState<InvokeResult | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const { canWrite } = useAccess()
  if (selected === null) return <p class="muted">This application has no function to invoke.</p>
  // Invoking runs code: the API treats it as a write.
  if (!canWrite) return <p class="muted">Invoking runs the function, which read-only access does not allow.</p>
  const target = path ?? pathOf(selected.route)
  const shown = result === null ? null : prettyBody(result)

  return (
    <section aria-labelledby="invoke">
      <h2 id="invoke">Invoke</h2>
      {app.deployment === null && (
        <p class="muted">Nothing is deployed yet: build the application first, or the call answers 404.</p>
      )}
      <form
        class="card"
        onSubmit={(event) => {
          event.preventDefault()
          setBusy(true)
          setError(null)
          void (async () => {
            try {
              const request: InvokeRequest = { method, path: target, headers: parseHeaders(headers) }
              if (file !== null) Object.assign(request, { body: file.base64, bodyIsBase64: true })
              else if (body !== '' && method !== 'GET' && method !== 'HEAD') request.body = body
              setResult(
                await sendJson<InvokeResult>(
                  'POST',
                  `/applications/${app.id}/functions/${selected.id}/invoke`,
                  request,
                ),
              )
            } catch (e) {
              setError(messageOf(e))
            } finally {
              setBusy(false)
            }
          })()
        }}
      >
        <div class="fields">
          <label>
            Function
            <select
              value={selected.id}
              onChange={(e) => {
                onSelect(e.currentTarget.value)
                setPath(null)
              }}
            >
              {app.functions.map((f) => (
                <option key={f.id} value={f.id}>
                  {f.name} ({f.route})
                </option>
              ))}
            </select>
          </label>
          <label>
            Method
            <select name="method" value={method} onChange={(e) => setMethod(e.currentTarget.value)}>
              {METHODS.map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
          </label>
          <label class="grow">
            Path <input name="path" value={target} onInput={(e) => setPath(e.currentTarget.value)} />
          </label>
        </div>
        <label>
          Headers, one "Name: value" a line{' '}
          <textarea name="headers" rows={3} value={headers} onInput={(e) => setHeaders(e.currentTarget.value)} />
        </label>
        <label>
          Body (text){' '}
          <textarea
            name="body"
            rows={5}
            value={body}
            disabled={file !== null}
            onInput={(e) => setBody(e.currentTarget.value)}
          />
        </label>
        <div class="row">
          <label class="button">
            Body from a file…
            <input
              type="file"
              class="visually-hidden"
              onChange={(e) => {
                const chosen = e.currentTarget.files?.[0]
                e.currentTarget.value = ''
                if (chosen === undefined) return
                void chosen
                  .arrayBuffer()
                  .then((buffer) =>
                    setFile({ name: chosen.name, size: chosen.size, base64: base64Of(new Uint8Array(buffer)) }),
                  )
              }}
            />
          </label>
          {file !== null && (
            <span>
              {file.name}, {file.size} bytes, sent as base64{' '}
              <button type="button" onClick={() => setFile(null)}>
                Clear file
              </button>
            </span>
          )}
        </div>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Sending…' : 'Send'}
        </button>
      </form>
      {error !== null && <ErrorText message={error} />}
      {result !== null && shown !== null && (
        <div class="card result" aria-live="polite">
          <h3>Answer</h3>
          <dl class="facts">
            <dt>Status</dt>
            <dd data-testid="invoke-status" class={result.status < 400 ? 'ok' : 'warn'}>
              {result.status}
            </dd>
            <dt>Duration</dt>
            <dd>{result.durationMs.toFixed(1)} ms</dd>
            <dt>Truncated</dt>
            <dd>{result.truncated ? 'yes: the body was cut at 1 MiB' : 'no'}</dd>
            <dt>Body</dt>
            <dd>{shown.kind}</dd>
          </dl>
          <details>
            <summary>Headers ({Object.keys(result.headers).length})</summary>
            <pre>
              {Object.entries(result.headers)
                .flatMap(([name, values]) => values.map((v) => `${name}: ${v}`))
                .join('\n')}
            </pre>
          </details>
          <pre class="body" data-testid="invoke-body" tabIndex={0} aria-label="Answer body">
            {shown.text}
          </pre>
        </div>
      )}
    </section>
  )
}
