import { createHash } from 'node:crypto'

/** Who a request belongs to: a tenant (the API key's hash) and, when the client says, a session. */
export interface Identity {
  readonly tenant: string
  /** The client's own session id (from the session header), when it sends one. */
  readonly explicit?: string | undefined
}

const CREDENTIAL_HEADERS = ['authorization', 'x-api-key', 'api-key'] as const

/**
 * A tenant is the hash of the credential the client sends: another key never reaches its
 * sessions, and the key itself is never stored.
 */
export function tenantOf(headers: Headers): string {
  const credential = CREDENTIAL_HEADERS.map((name) => headers.get(name)).find((value) => value)
  return credential ? 't' + shortHash(credential) : 'anonymous'
}

export function identify(headers: Headers, sessionHeader: string): Identity {
  const explicit = headers.get(sessionHeader)?.trim()
  return { tenant: tenantOf(headers), explicit: explicit ? explicit : undefined }
}

/** The store scope of an explicit session, of a new implicit one, and of a tenant's index. */
export function explicitScope(identity: Identity & { explicit: string }): string {
  return `${identity.tenant}/e${shortHash(identity.explicit)}`
}

export function implicitScope(identity: Identity, randomId: string): string {
  return `${identity.tenant}/i${randomId}`
}

export function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 22)
}
