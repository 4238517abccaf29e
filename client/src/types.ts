// The admin API's shapes, written from the relay's (relay/src/session/session.ts and
// admin/create-session.ts); test/client/admin-types.test.ts fails when the two drift.

export type SessionState = 'pending' | 'half_open' | 'open' | 'closed'

export type Session = {
  id: string
  state: SessionState
  created_at: string
  expires_at: string
  last_activity: string
  bytes_in: number
  bytes_out: number
  initiator_connected: boolean
  responder_connected: boolean
  /** What the creator set (or the relay's defaults): null is no such limit. */
  limits: { max_bytes: number | null; bytes_per_second: number | null; ttl_seconds: number }
}

/** The optional body of a create: limits on the new session. */
export type SessionLimits = {
  /** Payload bytes both peers may send in total; past it the relay closes with 4004. */
  max_bytes?: number
  /** Each direction's rate; faster is held by the relay, past its backlog limit 4003. */
  bytes_per_second?: number
  /** At most the relay's session TTL. */
  ttl_seconds?: number
}

export type CreatedSession = {
  id: string
  initiator_token: string
  responder_token: string
  /** Only when the relay has a public base URL. */
  initiator_url?: string
  responder_url?: string
  created_at: string
  expires_at: string
}

export type SessionPage = {
  sessions: Session[]
  /** Present while more sessions remain: pass it back as `cursor`. */
  next_cursor?: string
}

export type Discovery = {
  issuer: string
  audience: string
  scopes: string[]
  authorization_endpoint: string
  token_endpoint: string
  device_authorization_endpoint: string
  client_id_hint: string
}
