// Sign-in with OpenID Connect in the browser: authorization code with PKCE (RFC 7636) for a
// public client. The verifier, state and nonce wait in sessionStorage across the redirect; the
// tokens live in sessionStorage (gone with the tab) and are refreshed before the id token
// expires. Nothing is put in a URL but the code the provider sends back, which is removed from
// the address bar at once and is single-use.
export type AuthSettings = { issuer: string; clientId: string; scopes: string }

type Discovery = { authorization_endpoint: string; token_endpoint: string; end_session_endpoint?: string }
type Tokens = { idToken: string; refreshToken: string | null; expiresAt: number }
type Pending = { state: string; verifier: string; nonce: string; returnTo: string }

const TOKENS = 'console.tokens'
const PENDING = 'console.pending-sign-in'
// Refresh this long before the id token runs out, so a request in flight never carries a dead one.
const EARLY_MS = 60_000

let settings: AuthSettings | null = null
let discovery: Discovery | null = null
let refreshing: Promise<string | null> | null = null

class SignInError extends Error {}

const redirectUri = (): string => `${location.origin}/`

function randomText(bytes: number): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)))
}

function base64url(bytes: Uint8Array): string {
  let text = ''
  for (const byte of bytes) text += String.fromCharCode(byte)
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

async function challengeOf(verifier: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))))
}

async function discover(s: AuthSettings): Promise<Discovery> {
  if (discovery !== null) return discovery
  const url = `${s.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`
  let res: Response
  try {
    res = await fetch(url)
  } catch {
    throw new SignInError(`the identity provider at ${s.issuer} cannot be reached`)
  }
  if (!res.ok)
    throw new SignInError(`the identity provider at ${s.issuer} answered ${res.status} for its discovery document`)
  discovery = (await res.json()) as Discovery
  return discovery
}

function claimsOf(jwt: string): Record<string, unknown> {
  const payload = jwt.split('.')[1] ?? ''
  const json = atob(payload.replace(/-/g, '+').replace(/_/g, '/'))
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(json, (c) => c.charCodeAt(0)))) as Record<string, unknown>
}

function readTokens(): Tokens | null {
  const text = sessionStorage.getItem(TOKENS)
  return text === null ? null : (JSON.parse(text) as Tokens)
}

function saveTokens(answer: { id_token?: string; refresh_token?: string }, previousRefresh: string | null): Tokens {
  if (typeof answer.id_token !== 'string') throw new SignInError('the identity provider sent no id token')
  const exp = claimsOf(answer.id_token).exp
  const tokens: Tokens = {
    idToken: answer.id_token,
    refreshToken: answer.refresh_token ?? previousRefresh,
    expiresAt: typeof exp === 'number' ? exp * 1000 : Date.now() + 5 * 60_000,
  }
  sessionStorage.setItem(TOKENS, JSON.stringify(tokens))
  return tokens
}

async function tokenRequest(
  s: AuthSettings,
  params: Record<string, string>,
): Promise<{ id_token?: string; refresh_token?: string }> {
  const { token_endpoint: endpoint } = await discover(s)
  let res: Response
  try {
    res = await fetch(endpoint, { method: 'POST', body: new URLSearchParams({ client_id: s.clientId, ...params }) })
  } catch {
    throw new SignInError("the identity provider's token endpoint cannot be reached")
  }
  const answer = (await res.json().catch(() => ({}))) as {
    error?: string
    error_description?: string
    id_token?: string
    refresh_token?: string
  }
  if (!res.ok)
    throw new SignInError(
      `the identity provider refused: ${answer.error_description ?? answer.error ?? `status ${res.status}`}`,
    )
  return answer
}

/** Sets up sign-in; finishes one that comes back from the provider (the code in the URL). */
export async function startAuth(s: AuthSettings): Promise<void> {
  settings = s
  const query = new URLSearchParams(location.search)
  const code = query.get('code')
  const error = query.get('error')
  if (code === null && error === null) return
  // The code and state leave the address bar (and the history) before anything else happens.
  history.replaceState(null, '', `${location.pathname}${location.hash}`)
  const pendingText = sessionStorage.getItem(PENDING)
  sessionStorage.removeItem(PENDING)
  if (error !== null) throw new SignInError(`sign-in failed: ${query.get('error_description') ?? error}`)
  const pending = pendingText === null ? null : (JSON.parse(pendingText) as Pending)
  if (pending === null || pending.state !== query.get('state'))
    throw new SignInError(
      'sign-in failed: the answer does not belong to a sign-in started here (state mismatch); sign in again',
    )
  const answer = await tokenRequest(s, {
    grant_type: 'authorization_code',
    code: code ?? '',
    redirect_uri: redirectUri(),
    code_verifier: pending.verifier,
  })
  const tokens = saveTokens(answer, null)
  if (claimsOf(tokens.idToken).nonce !== pending.nonce) {
    sessionStorage.removeItem(TOKENS)
    throw new SignInError("sign-in failed: the id token's nonce does not match this sign-in")
  }
  if (pending.returnTo !== '') location.hash = pending.returnTo
}

/** Off to the provider's sign-in page; back at / with a code. */
export async function signIn(): Promise<void> {
  if (settings === null) throw new SignInError('sign-in is not set up')
  const d = await discover(settings)
  const pending: Pending = {
    state: randomText(24),
    verifier: randomText(48),
    nonce: randomText(24),
    returnTo: location.hash,
  }
  sessionStorage.setItem(PENDING, JSON.stringify(pending))
  const url = new URL(d.authorization_endpoint)
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: settings.clientId,
    redirect_uri: redirectUri(),
    scope: settings.scopes,
    state: pending.state,
    nonce: pending.nonce,
    code_challenge: await challengeOf(pending.verifier),
    code_challenge_method: 'S256',
    // offline_access is granted only with consent asked for (OpenID Connect Core §11).
    ...(settings.scopes.split(' ').includes('offline_access') ? { prompt: 'consent' } : {}),
  }).toString()
  location.assign(url.toString())
}

export function signOut(): void {
  sessionStorage.removeItem(TOKENS)
}

export function signedIn(): boolean {
  return readTokens() !== null
}

/** Who is signed in, from the id token: a name to show. */
export function userName(): string {
  const tokens = readTokens()
  if (tokens === null) return ''
  const claims = claimsOf(tokens.idToken)
  // The first of these that is text: a provider may put anything in a claim.
  const name = [claims.name, claims.email, claims.preferred_username, claims.sub].find(
    (claim): claim is string => typeof claim === 'string',
  )
  return name ?? ''
}

/** The id token to send, refreshed first when it is about to expire; null: sign in again. */
export async function currentToken(force = false): Promise<string | null> {
  const tokens = readTokens()
  if (tokens === null) return null
  if (!force && tokens.expiresAt - Date.now() > EARLY_MS) return tokens.idToken
  if (tokens.refreshToken === null || settings === null) {
    if (tokens.expiresAt > Date.now() && !force) return tokens.idToken
    signOut()
    return null
  }
  const s = settings
  const refreshToken = tokens.refreshToken
  refreshing ??= tokenRequest(s, { grant_type: 'refresh_token', refresh_token: refreshToken })
    .then((answer) => saveTokens(answer, refreshToken).idToken)
    .catch(() => {
      signOut()
      return null
    })
    .finally(() => {
      refreshing = null
    })
  return refreshing
}
