/**
 * Header forwarding by allowlist, in both directions. Copying headers is how proxies leak
 * hop-by-hop fields (RFC 9110 §7.6.1), and Node's undici throws on several of them.
 */
export type IncomingHeaders = Headers | Record<string, string | string[] | undefined>

const REQUEST_HEADERS = new Set([
  'authorization',
  'api-key',
  'x-api-key',
  'content-type',
  'accept',
  'user-agent',
  'openai-organization',
  'openai-project',
  'openai-beta',
  'anthropic-version',
  'anthropic-beta',
  'http-referer',
  'x-title',
  // The Codex CLI's own: its ChatGPT backend wants the account, and the session and thread
  // it names (`session_id` in versions before 0.171).
  'chatgpt-account-id',
  'originator',
  'session-id',
  'session_id',
  'thread-id',
  'version',
])

const RESPONSE_HEADERS = new Set([
  'content-type',
  'retry-after',
  // The OpenAI and Anthropic SDKs read both before they retry.
  'retry-after-ms',
  'x-should-retry',
  'x-request-id',
  'request-id',
  'cache-control',
])
const RESPONSE_HEADER_PREFIXES = ['openai-', 'x-ratelimit-', 'anthropic-']

// RFC 9110 §7.6.1 and §11.7.1, plus the framing headers that the sender recomputes.
const HOP_BY_HOP_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
])

/**
 * The client's headers that may reach the upstream: the allowlist plus custom `x-*` headers,
 * minus proxy-set client-address headers, hop-by-hop headers and `options.drop`.
 * @example requestHeadersForUpstream({ authorization: 'Bearer k', host: 'proxy' }) // { authorization: 'Bearer k' }
 */
export function requestHeadersForUpstream(
  incoming: IncomingHeaders,
  options: { drop?: string[] } = {},
): Record<string, string> {
  const drop = new Set(options.drop?.map((name) => name.toLowerCase()))
  return filterHeaders(incoming, (name) => !drop.has(name) && isForwardedRequestHeader(name))
}

/**
 * The upstream's response headers that may reach the client. Never content-length: the caller
 * sets framing, and the body may have been decoded or rewritten.
 * @example responseHeadersForClient({ 'content-type': 'text/event-stream', 'content-length': '9' }, { passthroughEncoding: false })
 * // { 'content-type': 'text/event-stream' }
 */
export function responseHeadersForClient(
  upstream: IncomingHeaders,
  options: { passthroughEncoding: boolean },
): Record<string, string> {
  return filterHeaders(
    upstream,
    (name) =>
      RESPONSE_HEADERS.has(name) ||
      (options.passthroughEncoding && name === 'content-encoding') ||
      RESPONSE_HEADER_PREFIXES.some((prefix) => name.startsWith(prefix)),
  )
}

function isForwardedRequestHeader(name: string): boolean {
  if (REQUEST_HEADERS.has(name)) return true
  // The client's address is ours to state, not the client's to forge.
  if (name.startsWith('x-forwarded-') || NOT_THE_CLIENTS.has(name)) return false
  return name.startsWith('x-')
}

/**
 * `x-*` headers a client has no business sending through: its address (which servers behind a
 * proxy trust), and another path or method than the request's (which some frameworks obey).
 */
const NOT_THE_CLIENTS: ReadonlySet<string> = new Set([
  'x-real-ip',
  'x-client-ip',
  'x-originating-ip',
  'x-cluster-client-ip',
  'x-original-url',
  'x-rewrite-url',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
])

/** Lower-cased, multi-valued fields joined with ', ', hop-by-hop and Connection-named fields removed. */
function filterHeaders(
  incoming: IncomingHeaders,
  allowed: (lowerName: string) => boolean,
): Record<string, string> {
  const entries = headerEntries(incoming)
  const namedByConnection = new Set(
    entries
      .filter(([name]) => name === 'connection')
      .flatMap(([, value]) => value.split(','))
      .map((token) => token.trim().toLowerCase())
      .filter((token) => token !== ''),
  )
  const result: Record<string, string> = {}
  for (const [name, value] of entries) {
    if (HOP_BY_HOP_HEADERS.has(name) || namedByConnection.has(name) || !allowed(name)) continue
    result[name] = result[name] === undefined ? value : `${result[name]}, ${value}`
  }
  return result
}

function headerEntries(incoming: IncomingHeaders): [string, string][] {
  const entries: [string, string][] = []
  const iterable = incoming instanceof Headers ? incoming.entries() : Object.entries(incoming)
  for (const [name, value] of iterable) {
    if (value === undefined) continue
    entries.push([name.toLowerCase(), Array.isArray(value) ? value.join(', ') : value])
  }
  return entries
}
