// The application's log, tailing live while the tab is open (follow=true, the last 200 lines).
import { useEffect, useRef, useState } from 'preact/hooks'
import { messageOf, streamText } from '../api/client'
import type { Application } from '../api/types'
import { ErrorText } from './status'

export function LogPanel({ app }: { app: Application }) {
  const [text, setText] = useState('')
  const [state, setState] = useState<'tailing' | 'ended' | 'stopped'>('tailing')
  const [error, setError] = useState<string | null>(null)
  const [round, setRound] = useState(0)
  const pre = useRef<HTMLPreElement>(null)
  useEffect(() => {
    if (state !== 'tailing') return
    const abort = new AbortController()
    setText('')
    setError(null)
    streamText(`/applications/${app.id}/logs?follow=true&tail=200`, abort.signal, (chunk) =>
      setText((t) => t + chunk),
    ).then(
      () => {
        if (!abort.signal.aborted) setState('ended')
      },
      (e: unknown) => {
        setError(messageOf(e))
        setState('ended')
      },
    )
    return () => abort.abort()
  }, [app.id, round, state])
  useEffect(() => {
    pre.current?.scrollTo({ top: pre.current.scrollHeight })
  }, [text])
  return (
    <section aria-labelledby="app-log">
      <h2 id="app-log">Application log</h2>
      <p class="row">
        <span role="status">
          {state === 'tailing' ? 'Tailing live…' : state === 'ended' ? 'The log stream ended.' : 'Stopped.'}
        </span>
        {state === 'tailing' ? (
          <button type="button" onClick={() => setState('stopped')}>
            Stop
          </button>
        ) : (
          <button
            type="button"
            onClick={() => {
              setState('tailing')
              setRound((r) => r + 1)
            }}
          >
            Tail again
          </button>
        )}
      </p>
      {error !== null && <ErrorText message={error} />}
      <pre class="log" ref={pre} tabIndex={0} aria-label="Application log">
        {text === '' ? (error === null ? '(nothing yet)' : '') : text}
      </pre>
    </section>
  )
}
