import { createHash, type Hash } from 'node:crypto'
import { updateText } from '../context/index.js'
import type { Memo } from '../memo.js'
import { isRecord } from '../wire/chat.js'

/** Who a request belongs to: a tenant (the API key's hash) and, when the client says, a session. */
export interface Identity {
  readonly tenant: string
  /** The client's own session id (from a header or the body), when it sends one. */
  readonly explicit?: string | undefined
}

/** Where agents put their session ids (loop.json proxy.sessions, --session-header first). */
export interface SessionSources {
  readonly headers: readonly string[]
  /** Headers that keep a session's fast-path memory apart, but do not name its scope. */
  readonly affinity: readonly string[]
  readonly body: readonly string[]
  readonly userPattern: RegExp
  /** Put before every tenant: `--observe` keeps its shadow sessions apart from real ones. */
  readonly tenantPrefix?: string | undefined
}

/** Where `withQueryCredentials` puts a key the client sent in the URL (never forwarded: not x-*). */
export const QUERY_CREDENTIAL_HEADER = 'lembas-query-credential'

const CREDENTIAL_HEADERS = [
  'authorization',
  'x-api-key',
  'api-key',
  QUERY_CREDENTIAL_HEADER,
] as const

const KNOWN: ReadonlySet<string> = new Set(CREDENTIAL_HEADERS)

/**
 * Other headers that go upstream and may carry a key: Gemini's `x-goog-api-key`, LiteLLM's
 * `x-litellm-api-key`, Portkey's `x-portkey-api-key`, an `x-auth-token`, a bare `x-token` or
 * `x-apikey`. The proxy's own secret (`x-lembas-auth`) never goes upstream and is everyone's:
 * not a tenant's.
 */
const OTHER_CREDENTIAL =
  /^x-(?!lembas-auth$)(?:[a-z0-9-]*-)?(?:api-?key|apikey|key|token|auth|secret)$/

/** Query parameters that carry a key: Gemini's `?key=`, an `?api_key=`, an `?access_token=`. */
const QUERY_CREDENTIAL = /^(?:key|api[-_]?key|access[-_]?token|token|auth|secret)$/i

/**
 * The client's headers with the keys its URL carries (forwarded upstream as they came) under
 * one header of their own, so that another key in the URL is another tenant too. Most requests
 * carry none: their headers are returned as they are.
 */
export function withQueryCredentials(headers: Headers, search: string): Headers {
  if (search.length < 2) return headers
  const keys = [...new URLSearchParams(search)].filter(
    ([name, value]) => value !== '' && QUERY_CREDENTIAL.test(name),
  )
  if (keys.length === 0) return headers
  const out = new Headers(headers)
  out.set(QUERY_CREDENTIAL_HEADER, new URLSearchParams(keys).toString())
  return out
}

/**
 * A tenant is the hash of every credential header the client sends, each with its name: any
 * difference in any of them (a gateway's shared token with each user's own key beside it; one
 * secret sent as `x-api-key` or as `authorization`) is another tenant, whose sessions this one
 * never reaches. The keys themselves are never stored.
 */
export function tenantOf(headers: Headers, memo?: Memo<string>): string {
  const present: [string, string][] = CREDENTIAL_HEADERS.flatMap((name) => {
    const value = headers.get(name)
    return value ? [[name, value] as [string, string]] : []
  })
  headers.forEach((value, name) => {
    if (value && OTHER_CREDENTIAL.test(name) && !KNOWN.has(name)) present.push([name, value])
  })
  if (present.length === 0) return 'anonymous'
  // An Authorization header alone hashes as it always has: stored sessions keep their tenant.
  const [only] = present
  const credential =
    present.length === 1 && only![0] === 'authorization'
      ? only![1]
      : present.map(([name, value]) => `${name}: ${value}`).join('\n')
  // A client sends the same key on every request: hash it once (the memo lives in memory only).
  let tenant = memo?.get(credential)
  if (tenant === undefined) {
    tenant = 't' + shortHash(credential)
    memo?.set(credential, tenant)
  }
  return tenant
}

/**
 * The session id the agent sends: the first of the session headers (opencode's
 * x-session-affinity, Goose's x-goose-session-id, OpenHands' x-litellm-session-id, …), then the
 * body's prompt_cache_key or metadata.session_id, then a `…session_<uuid>` inside `user`.
 */
export function identify(
  headers: Headers,
  body: Record<string, unknown>,
  sources: SessionSources,
  tenants?: Memo<string>,
): Identity {
  const tenant = (sources.tenantPrefix ?? '') + tenantOf(headers, tenants)
  const named = firstHeader(headers, sources.headers)
  if (named) return { tenant, explicit: 'h:' + named }
  for (const path of sources.body) {
    const value = dotted(body, path)
    if (typeof value === 'string' && value.trim() !== '')
      return { tenant, explicit: 'b:' + value.trim() }
  }
  const user = body.user
  if (typeof user === 'string') {
    const match = sources.userPattern.exec(user)
    if (match?.[1]) return { tenant, explicit: 'u:' + match[1].toLowerCase() }
  }
  return { tenant }
}

/** The value of the first of `names` the request sends, trimmed, unless empty. */
export function firstHeader(headers: Headers, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = headers.get(name)?.trim()
    if (value) return value
  }
  return undefined
}

function dotted(value: unknown, path: string): unknown {
  let current = value
  for (const part of path.split('.')) {
    if (!isRecord(current)) return undefined
    current = current[part]
  }
  return current
}

/** The store scope of an explicit session, and of a new implicit one. */
export function explicitScope(identity: Identity & { explicit: string }): string {
  return `${identity.tenant}/e${shortHash(identity.explicit)}`
}

export function implicitScope(identity: Identity, randomId: string): string {
  return `${identity.tenant}/i${randomId}`
}

export function shortHash(text: string): string {
  return shortDigest(updateText(createHash('sha256'), text))
}

/** A running SHA-256 as a short key: the first 22 characters of its base64url digest. */
export function shortDigest(hash: Hash): string {
  return hash.digest('base64url').slice(0, 22)
}
