// Builds and the deployment: Build starts one and streams its log live (follow=true) while its
// status is polled until it succeeds or fails; the deployment's state and a Deploy button.
import { useEffect, useRef, useState } from 'preact/hooks'
import { getJson, messageOf, sendJson, streamText } from '../api/client'
import type { Accepted, Application, Build } from '../api/types'
import { useAccess } from './access'
import { Conditions } from './conditions'
import { RunningBuild } from './running-build'
import { ErrorText, Notice } from './status'

const FINISHED = new Set(['succeeded', 'failed'])
const DEPLOYMENT_POLL_MS = 2000

/** An image's size as people read it, with the exact count for comparing with the registry. */
function ImageSize({ bytes }: { bytes: number | null }) {
  if (bytes === null) return <span class="muted">not known</span>
  const units = ['B', 'KiB', 'MiB', 'GiB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return (
    <span data-testid="image-size">
      {unit === 0 ? value : value.toFixed(1)} {units[unit]}{' '}
      <span class="muted">({bytes.toLocaleString('en')} bytes)</span>
    </span>
  )
}

export function BuildPanel({ app, onChanged }: { app: Application; onChanged: () => void }) {
  const [watching, setWatching] = useState<string | null>(app.builds[0]?.id ?? null)
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const { canWrite } = useAccess()
  return (
    <>
      <section aria-labelledby="builds">
        <h2 id="builds">Builds</h2>
        {canWrite && (
          <p class="row">
            <button
              type="button"
              class="primary"
              disabled={busy}
              onClick={() => {
                setBusy(true)
                setError(null)
                sendJson<Build>('POST', `/applications/${app.id}/builds`)
                  .then(
                    (build) => {
                      if (build !== null) setWatching(build.id)
                      onChanged()
                    },
                    (e: unknown) => setError(messageOf(e)),
                  )
                  .finally(() => setBusy(false))
              }}
            >
              {busy ? 'Starting…' : 'Build'}
            </button>
            <span class="muted small">Builds the saved source; a successful build is deployed.</span>
          </p>
        )}
        {error !== null && <ErrorText message={error} />}
        {watching !== null && <BuildLog key={watching} appId={app.id} buildId={watching} onFinished={onChanged} />}
        {app.builds.length > 0 && (
          <table>
            <caption class="visually-hidden">Builds, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Started</th>
                <th scope="col">Status</th>
                <th scope="col">Image or error</th>
                <th scope="col">
                  <span class="visually-hidden">Log</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {app.builds.map((b) => (
                <tr key={b.id}>
                  <td data-label="Started">{new Date(b.createdAt).toLocaleString()}</td>
                  <td data-label="Status">
                    <span class={`status-${b.status}`}>{b.status}</span>
                    {b.id === app.deployment?.buildId && (
                      <span class="tag" data-testid="deployed-build">
                        deployed
                      </span>
                    )}
                  </td>
                  <td data-label="Image or error" class="break">
                    {b.error ?? b.imageRef ?? ''}
                    {b.imageRef !== null && b.imageSizeBytes !== null && (
                      <>
                        {' '}
                        · <ImageSize bytes={b.imageSizeBytes} />
                      </>
                    )}
                  </td>
                  <td>
                    <button type="button" onClick={() => setWatching(b.id)} aria-pressed={watching === b.id}>
                      Log<span class="visually-hidden"> of the build of {new Date(b.createdAt).toLocaleString()}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <DeploymentCard app={app} onChanged={onChanged} />
    </>
  )
}

function BuildLog({ appId, buildId, onFinished }: { appId: string; buildId: string; onFinished: () => void }) {
  const [text, setText] = useState('')
  const [build, setBuild] = useState<Build | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [streaming, setStreaming] = useState(true)
  const pre = useRef<HTMLPreElement>(null)

  useEffect(() => {
    const abort = new AbortController()
    streamText(`/applications/${appId}/builds/${buildId}/logs?follow=true`, abort.signal, (chunk) =>
      setText((t) => t + chunk),
    )
      .catch((e: unknown) => setError(messageOf(e)))
      .finally(() => setStreaming(false))
    return () => abort.abort()
  }, [appId, buildId])

  // The status, until it is final: the log may end before the build is recorded as finished.
  useEffect(() => {
    let live = true
    let timer: ReturnType<typeof setTimeout> | undefined
    const poll = (): void => {
      getJson<Build>(`/applications/${appId}/builds/${buildId}`).then(
        (b) => {
          if (!live) return
          setBuild(b)
          if (FINISHED.has(b.status)) onFinished()
          else timer = setTimeout(poll, 1000)
        },
        (e: unknown) => {
          if (live) setError(messageOf(e))
        },
      )
    }
    poll()
    return () => {
      live = false
      clearTimeout(timer)
    }
  }, [appId, buildId])

  useEffect(() => {
    pre.current?.scrollTo({ top: pre.current.scrollHeight })
  }, [text])
  const status = build?.status ?? 'pending'
  return (
    <div class="card">
      <h3>
        Build log{' '}
        <span class={`status-${status}`} data-testid="build-status">
          {status}
        </span>
      </h3>
      <p class="muted small" role="status">
        {streaming ? 'Streaming the log live…' : 'The log is complete.'}
        {build?.error != null && ` ${build.error}`}
      </p>
      {error !== null && <ErrorText message={error} />}
      <pre class="log" ref={pre} tabIndex={0} aria-label="Build log">
        {text === '' ? (streaming ? 'Waiting for the build to start…' : '(empty)') : text}
      </pre>
    </div>
  )
}

function DeploymentCard({ app, onChanged }: { app: Application; onChanged: () => void }) {
  const [message, setMessage] = useState<string | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const { canWrite } = useAccess()
  const d = app.deployment
  // A deployment starting (after a build, a deploy or a settings change) becomes ready on its
  // own: the application is read again until it is, so the card follows without a Refresh.
  const starting = d !== null && !d.ready
  useEffect(() => {
    if (!starting) return
    const timer = setTimeout(onChanged, DEPLOYMENT_POLL_MS)
    return () => clearTimeout(timer)
  }, [app, starting])
  return (
    <section aria-labelledby="deployment">
      <h2 id="deployment">Deployment</h2>
      {d === null ? (
        <p class="muted">Not deployed: a successful build deploys the application.</p>
      ) : (
        <dl class="facts">
          <dt>State</dt>
          <dd>
            <span class={d.ready ? 'ok' : 'warn'}>{d.ready ? 'ready' : 'not ready'}</span>
          </dd>
          <dt>Replicas</dt>
          <dd>
            {d.observedReplicas} of {d.replicas}
          </dd>
          <dt>Build</dt>
          <dd>
            <RunningBuild deployment={d} builds={app.builds} />
          </dd>
          <dt>Image</dt>
          <dd class="break">{d.image}</dd>
          <dt>Image size</dt>
          <dd>
            <ImageSize bytes={d.imageSizeBytes} />
          </dd>
          <dt>Internal URL</dt>
          <dd class="break">{d.internalUrl}</dd>
          <dt>Public URL</dt>
          <dd class="break">
            {d.publicUrl === null ? (
              <span class="muted">none (no public base URL set)</span>
            ) : (
              <a href={d.publicUrl}>{d.publicUrl}</a>
            )}
          </dd>
          <dt>Message</dt>
          <dd>{d.message === '' ? <span class="muted">none</span> : d.message}</dd>
          <dt>Conditions</dt>
          <dd>
            <Conditions conditions={d.conditions} />
          </dd>
        </dl>
      )}
      <p class="row">
        {canWrite && (
          <button
            type="button"
            disabled={busy}
            onClick={() => {
              setBusy(true)
              setError(null)
              setMessage(null)
              sendJson<Accepted>('POST', `/applications/${app.id}/deploy`)
                .then(
                  (answer) => {
                    setMessage(answer?.message ?? 'deploying')
                    onChanged()
                  },
                  (e: unknown) => setError(messageOf(e)),
                )
                .finally(() => setBusy(false))
            }}
          >
            {busy ? 'Deploying…' : 'Deploy'}
          </button>
        )}
        <button type="button" onClick={onChanged}>
          Refresh
        </button>
      </p>
      {message !== null && <Notice>{message}</Notice>}
      {error !== null && <ErrorText message={error} />}
    </section>
  )
}
