// The console's shell: sign-in first when the control plane asks for it, then the pages by the
// address's hash (#/ the applications, #/apps/{id}/{tab} one application, #/traces and
// #/traces/{id} the kept traces), so the server only
// ever serves index.html at / and a reload keeps the page.
import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { ApiError, getJson, messageOf, useAuth } from './api/client'
import type { ConsoleConfig, Me } from './api/types'
import { signIn, signOut, signedIn, startAuth, userName } from './auth/oidc'
import { AppList } from './pages/app-list'
import { AppPage } from './pages/app-page'
import { TracePage, TracesPage } from './pages/traces'
import type { Access } from './parts/access'
import { AccessContext, accessOf } from './parts/access'
import { ErrorText } from './parts/status'
import './styles.css'

type Session =
  | { state: 'loading' }
  | { state: 'error'; message: string }
  | { state: 'sign-in'; configured: boolean; message?: string }
  | { state: 'ready'; user: string | null; access: Access }

function useHash(): string {
  const [hash, setHash] = useState(location.hash)
  useEffect(() => {
    const changed = (): void => setHash(location.hash)
    addEventListener('hashchange', changed)
    return () => removeEventListener('hashchange', changed)
  }, [])
  return hash
}

function Shell() {
  const [session, setSession] = useState<Session>({ state: 'loading' })
  const hash = useHash()

  useEffect(() => {
    // Who the API takes the caller for, before any page: the pages offer only what they may do.
    const ready = async (user: string | null): Promise<void> =>
      setSession({ state: 'ready', user, access: accessOf(await getJson<Me>('/me')) })
    void (async () => {
      try {
        const config = await getJson<ConsoleConfig>('/console-config')
        if (config.auth === null) return await ready(null)
        const auth = config.auth
        const toSignIn = (message?: string): void =>
          setSession({
            state: 'sign-in',
            configured: auth.clientId !== '',
            ...(message === undefined ? {} : { message }),
          })
        useAuth(true, () => toSignIn('Your session has ended: sign in again.'))
        if (auth.clientId === '') return toSignIn()
        try {
          await startAuth(auth)
        } catch (error) {
          return toSignIn(messageOf(error))
        }
        if (signedIn()) await ready(userName())
        else toSignIn()
      } catch (error) {
        // A 401 has already sent the caller back to sign-in, which says why.
        if (!(error instanceof ApiError && error.status === 401))
          setSession({ state: 'error', message: messageOf(error) })
      }
    })()
  }, [])

  if (session.state === 'loading')
    return (
      <main class="page">
        <p role="status">Loading…</p>
      </main>
    )
  if (session.state === 'error')
    return (
      <main class="page">
        <h1>Control plane console</h1>
        <ErrorText message={session.message} />
      </main>
    )
  if (session.state === 'sign-in') return <SignIn configured={session.configured} message={session.message} />

  const match = /^#\/apps\/([^/]+)(?:\/(\w+))?/.exec(hash)
  const trace = /^#\/traces(?:\/([0-9a-f]+))?$/.exec(hash)
  return (
    <AccessContext.Provider value={session.access}>
      <header class="bar">
        <a href="#/" class="brand">
          Control plane
        </a>
        <nav aria-label="Main">
          <a href="#/">Applications</a>
          <a href="#/traces">Traces</a>
        </nav>
        {session.user !== null && (
          <span class="user">
            <span>{session.user}</span>
            {session.access.role !== 'member' && (
              <span class="tag" data-testid="role">
                {session.access.role}
              </span>
            )}
            <button
              type="button"
              onClick={() => {
                signOut()
                setSession({ state: 'sign-in', configured: true })
              }}
            >
              Sign out
            </button>
          </span>
        )}
      </header>
      <main class="page" id="main">
        {trace !== null ? (
          trace[1] === undefined ? (
            <TracesPage />
          ) : (
            <TracePage key={trace[1]} traceId={trace[1]} />
          )
        ) : match === null ? (
          <AppList />
        ) : (
          <AppPage key={match[1]} appId={decodeURIComponent(match[1] ?? '')} tab={match[2] ?? 'code'} />
        )}
      </main>
    </AccessContext.Provider>
  )
}

function SignIn({ configured, message }: { configured: boolean; message?: string | undefined }) {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  return (
    <main class="page sign-in">
      <h1>Control plane console</h1>
      {message !== undefined && <ErrorText message={message} />}
      {configured ? (
        <>
          <p>Sign in with your organisation's account to manage applications.</p>
          <button
            type="button"
            class="primary"
            disabled={busy}
            onClick={() => {
              setBusy(true)
              signIn().catch((e: unknown) => {
                setError(messageOf(e))
                setBusy(false)
              })
            }}
          >
            {busy ? 'Redirecting…' : 'Sign in'}
          </button>
        </>
      ) : (
        <p>
          Sign-in is not configured: the control plane needs <code>--console-client-id</code> (
          <code>PLATFORM_CONSOLE_CLIENT_ID</code>), a public client registered at the identity provider with this page's
          address as its redirect URI.
        </p>
      )}
      {error !== null && <ErrorText message={error} />}
    </main>
  )
}

const root = document.getElementById('root')
if (root !== null) render(<Shell />, root)
