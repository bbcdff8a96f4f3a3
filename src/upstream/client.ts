import { pipeline, type Readable, type Transform } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import { Pool, type Dispatcher } from 'undici'
import { toAbortError, toUpstreamError, type UpstreamErrorContext } from './errors.js'
import { parseUpstreamTarget, upstreamPath } from './target.js'

export type UpstreamOptions = {
  /** e.g. http://127.0.0.1:8080/v1; request paths are joined below it. */
  baseUrl: string
  /** Wait for the response headers, and for each body chunk after them (idle, not total). */
  timeoutMs: number
  /** Wait for the TCP/TLS connection; undici's default is 10 s. */
  connectTimeoutMs?: number
  /**
   * How long an idle connection is kept for the next request. Shorter than any upstream's own
   * idle timeout (Node's 5 s, many proxies' 4 s and less), so a connection the upstream is
   * closing is not reused: a request is never retried, as its upstream may have started on it.
   */
  keepAliveMs?: number
}

/** One second: a new connection costs a millisecond on a LAN, a reused stale one a failed request. */
const DEFAULT_KEEPALIVE_MS = 1_000

export type UpstreamRequest = {
  method: string
  /** Relative to the base URL, may carry a query string: '/chat/completions?x=1'. */
  path: string
  /** Already filtered (see requestHeadersForUpstream); framing headers are dropped again here. */
  headers: Record<string, string>
  body?: string | Uint8Array | NodeJS.ReadableStream | null
  signal?: AbortSignal
  /** False: an answer compressed comes as it came, its Content-Encoding with it (default true). */
  decode?: boolean
}

/** The upstream's body, decoded when it came compressed: an async-iterable of Buffers. */
export type UpstreamBody = Readable

export type UpstreamResponse = {
  status: number
  headers: Record<string, string | string[]>
  body: UpstreamBody
}

export type Upstream = {
  /**
   * Sends one request; never follows redirects (a 3xx comes back as is). Rejects with a
   * LembasError (upstream_unreachable, upstream_timeout, upstream_bad_response), or with an
   * error named 'AbortError' when `signal` fired.
   */
  send(request: UpstreamRequest): Promise<UpstreamResponse>
  /**
   * Maps an error thrown while reading `response.body` the same way `send` maps its own
   * (body timeout → upstream_timeout, socket closed → upstream_unreachable, abort → AbortError).
   */
  mapError(error: unknown, signal?: AbortSignal): unknown
  /** The upstream that serves requests below `path` ('/messages', '/responses/…'): itself here. */
  forPath(path: string): Upstream
  /** Where it points, without credentials: one line per route, for healthz and start-up. */
  describe(): { readonly route: string; readonly url: string }[]
  /** Lets in-flight requests finish, then closes the idle connections. */
  close(): Promise<void>
  /**
   * Ends every request under way, and refuses every later one, with `reason` (a stop whose
   * grace ran out): each caller answers its client with it in its API's shape.
   */
  destroy(reason: Error): Promise<void>
  /** Aborted, with its reason, once `destroy` ran: a request waiting between attempts stops too. */
  readonly stopped: AbortSignal
}

const UNDICI_DEFAULT_CONNECT_TIMEOUT_MS = 10_000

// undici computes framing itself; a stale content-length after a body rewrite makes it throw.
const FRAMING_HEADERS = new Set([
  'connection',
  'content-length',
  'expect',
  'host',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
])

/**
 * A keep-alive connection pool to one OpenAI-compatible server.
 * @example createUpstream({ baseUrl: 'http://127.0.0.1:8080/v1', timeoutMs: 600_000 })
 */
export function createUpstream(options: UpstreamOptions): Upstream {
  const target = parseUpstreamTarget(options.baseUrl)
  const errorContext: UpstreamErrorContext = {
    displayUrl: target.displayUrl,
    timeoutMs: options.timeoutMs,
    connectTimeoutMs: options.connectTimeoutMs ?? UNDICI_DEFAULT_CONNECT_TIMEOUT_MS,
  }
  const keepAlive = options.keepAliveMs ?? DEFAULT_KEEPALIVE_MS
  const pool = new Pool(target.origin, {
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    // The upstream's own `Keep-Alive: timeout=` hint can only shorten it.
    keepAliveTimeout: keepAlive,
    keepAliveMaxTimeout: keepAlive,
    keepAliveTimeoutThreshold: Math.min(1_000, Math.floor(keepAlive / 2)),
    connect: { timeout: errorContext.connectTimeoutMs },
  })

  function mapError(error: unknown, signal?: AbortSignal): unknown {
    if (signal?.aborted) return toAbortError(signal.reason ?? error)
    return toUpstreamError(error, errorContext)
  }

  let destroyed: Error | undefined
  const stopping = new AbortController()
  async function send(request: UpstreamRequest): Promise<UpstreamResponse> {
    if (destroyed) throw destroyed
    const headers = forwardableHeaders(request.headers)
    if (target.basicAuthorization !== undefined && headers['authorization'] === undefined) {
      headers['authorization'] = target.basicAuthorization
    }
    try {
      const response = await pool.request({
        method: request.method as Dispatcher.HttpMethod,
        path: upstreamPath(target, request.path),
        headers,
        body: (request.body ?? null) as string | Uint8Array | Readable | null,
        signal: request.signal ?? null,
      })
      const answer = {
        status: response.statusCode,
        headers: definedHeaders(response.headers),
        body: response.body,
      }
      return request.decode === false ? answer : decoded(answer)
    } catch (error) {
      throw mapError(error, request.signal)
    }
  }

  const upstream: Upstream = {
    send,
    mapError,
    forPath: () => upstream,
    describe: () => [{ route: '*', url: target.displayUrl }],
    close: () => pool.close(),
    destroy: async (reason) => {
      destroyed = reason
      stopping.abort(reason)
      await pool.destroy(reason)
    },
    stopped: stopping.signal,
  }
  return upstream
}

function forwardableHeaders(headers: Record<string, string>): Record<string, string> {
  const result: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    const lowerName = name.toLowerCase()
    if (!FRAMING_HEADERS.has(lowerName)) result[lowerName] = value
  }
  return result
}

const DECODERS: Record<string, () => Transform> = {
  gzip: () => createGunzip(),
  'x-gzip': () => createGunzip(),
  deflate: () => createInflate(),
  br: () => createBrotliDecompress(),
}

/**
 * The proxy asks for no coding, but some servers compress anyway: the body is decoded here,
 * once, so a door reads its JSON and SSE and the client gets bytes that match their headers.
 * A coding it does not know goes as it came, its header with it.
 */
function decoded(response: UpstreamResponse): UpstreamResponse {
  const coding = response.headers['content-encoding']
  const decoder = typeof coding === 'string' ? DECODERS[coding.trim().toLowerCase()] : undefined
  if (!decoder) return response
  const headers = { ...response.headers }
  delete headers['content-encoding']
  delete headers['content-length']
  // A failure of either side (a cut, a corrupt body) ends the decoded body with it.
  const body = pipeline(response.body, decoder(), () => {})
  return { ...response, headers, body }
}

function definedHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const result: Record<string, string | string[]> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) result[name] = value
  }
  return result
}
