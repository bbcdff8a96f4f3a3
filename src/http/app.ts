import type { ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { Hono, type Context } from 'hono'
import { DOORS, doorOfPath, errorBodyOf } from '../doors/index.js'
import type { Door } from '../pipeline/door.js'
import { ERROR_KINDS, LembasError, openAIErrorBody, type ErrorKind } from '../errors.js'
import { warnOnce, type Logger } from '../log.js'
import { admitBody, NOT_ADMITTED } from '../pipeline/admission.js'
import { handle, type PipelineDeps, type Reply } from '../pipeline/handle.js'
import { withQueryCredentials } from '../session/identity.js'
import { turnBegins } from '../pace/index.js'
import { isAbortError } from '../upstream/index.js'
import { AUTH_HEADER, sameSiteOnly, sharedSecret } from './auth.js'
import { knownHostsOnly } from './hosts.js'
import { dashboardHtml } from './dashboard.js'
import { requestHeadersForUpstream, responseHeadersForClient } from './headers.js'
import { readBody, sseStream, upstreamResponse } from './io.js'
import { canDecode, contentCodings, decodeBody } from './request-encoding.js'

export interface AppOptions {
  /** A header by which any client can say "this request starts with a summary". */
  readonly compactionHeader: string
  readonly maxBodyBytes: number
  /** `--auth`: when set, every route but GET /healthz needs it in `x-lembas-auth`. */
  readonly authSecret?: string | undefined
  /** When set, a `Host` that names neither this machine nor one of these is refused. */
  readonly allowedHosts?: readonly string[] | undefined
}

/** The proxy's own header never reaches the upstream, with or without a secret configured. */
const upstreamHeaders = (incoming: Headers) =>
  requestHeadersForUpstream(incoming, { drop: [AUTH_HEADER] })

export interface AppDeps extends PipelineDeps {
  readonly options: AppOptions
  readonly log: Logger
}

/** The proxy's routes. It never listens: cli.ts does, and tests call it over real HTTP. */
export function createApp(deps: AppDeps): Hono {
  const app = new Hono()
  app.onError((error, c) => errorResponse(c, error, deps.log, doorOfPath(c.req.path)))
  app.notFound((c) =>
    c.json(openAIErrorBody('not_found', `no route for ${c.req.method} ${c.req.path}`), 404),
  )
  app.use('*', sameSiteOnly())
  if (deps.options.allowedHosts) app.use('*', knownHostsOnly(deps.options.allowedHosts, deps.log))
  if (deps.options.authSecret) app.use('*', sharedSecret(deps.options.authSecret, deps.log))

  app.get('/', (c) => c.html(dashboardHtml()))

  app.get('/healthz', async (c) => {
    try {
      await deps.store.ping()
      return c.json({ ok: true, store: deps.store.kind, upstreams: deps.upstream.describe() })
    } catch (error) {
      const body = { ok: false, store: deps.store.kind, error: (error as Error).message }
      return c.json(body, 503, { 'retry-after': '1' })
    }
  })

  // Behind the shared secret like every route but /healthz: sessions and counts are not public.
  const stats = deps.stats
  if (stats) {
    app.get('/metrics', async (c) =>
      c.body(await stats.metrics(), 200, {
        'content-type': 'text/plain; version=0.0.4; charset=utf-8',
      }),
    )
    app.get('/stats', async (c) => c.json(await stats.read()))
  }

  // The three front doors: one pipeline, each wire format an adapter.
  for (const door of DOORS) {
    app.post('/v1' + door.path, async (c) => {
      const encoding = c.req.header('content-encoding')
      const query = new URL(c.req.url).search
      const codings = contentCodings(encoding)
      const coded = codings.length > 0
      // A coded body is let in once decoded, by its size then (its prefixes digested then too).
      // Who it is: its key headers, and keys its URL carries (Gemini's `?key=`).
      const clientHeaders = withQueryCredentials(c.req.raw.headers, query)
      let admitted = coded ? NOT_ADMITTED : await admitBody(door, clientHeaders, deps)
      const prefixes = admitted.prefixes
      try {
        const received = await readBody(c, deps.options.maxBodyBytes, prefixes)
        const headers = upstreamHeaders(c.req.raw.headers)
        if (!canDecode(codings)) {
          warnOnce(deps.log, deps.memos.warned, 'request-encoding-forwarded', encoding!, {
            encoding,
            hint: 'a body in a coding this node cannot undo goes upstream as it came, unshaped (zstd needs Node 22.15 or later)',
          })
          const response = await deps.upstream.send({
            method: 'POST',
            path: door.path + query,
            headers: { ...headers, 'content-encoding': encoding! },
            body: received,
            signal: c.req.raw.signal,
          })
          return toResponse({ kind: 'upstream', response })
        }
        const rawBody = coded
          ? await decodeBody(received, codings, deps.options.maxBodyBytes)
          : received
        if (coded) admitted = await admitBody(door, clientHeaders, deps, rawBody.length)
        // Nothing to do after most requests: no listener for them.
        if (admitted.ended) whenAnswered(c, admitted.ended)
        const parsed = admitted.parsed
        turnBegins()
        const reply = await handle(
          door,
          {
            rawBody,
            coded: coded ? { bytes: received, encoding: encoding! } : undefined,
            clientHeaders,
            compactionSignal: c.req.header(deps.options.compactionHeader),
            query,
            headers,
            signal: c.req.raw.signal,
            prefixes,
            parsed,
          },
          deps,
        )
        return toResponse(reply)
      } catch (error) {
        return errorResponse(c, error, deps.log, door)
      } finally {
        admitted.parsed()
      }
    })
  }

  app.all('/v1/*', async (c) => {
    const url = new URL(c.req.url)
    const headers = upstreamHeaders(c.req.raw.headers)
    // Bytes pass through untouched here, compressed or not, so the client's choice stands
    // (not decoded on the way, as a door's answer is).
    const accepted = c.req.header('accept-encoding')
    if (accepted) headers['accept-encoding'] = accepted
    const encoding = c.req.header('content-encoding')
    if (encoding) headers['content-encoding'] = encoding
    const response = await deps.upstream.send({
      method: c.req.method,
      path: url.pathname.slice('/v1'.length) + url.search,
      headers,
      body: c.req.raw.body ? Readable.fromWeb(c.req.raw.body as never) : null,
      signal: c.req.raw.signal,
      decode: false,
    })
    return toResponse({ kind: 'upstream', response }, true)
  })
  return app
}

/**
 * Runs `then` once the answer has gone to the client, streamed or not, or the client left; never
 * for a request made in-process (no node response: nothing is served).
 */
function whenAnswered(c: Context, then: () => void): void {
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing
  outgoing?.once('close', then)
}

function toResponse(reply: Reply, passthroughEncoding = false): Response {
  switch (reply.kind) {
    case 'text':
      return new Response(reply.body, {
        status: reply.status,
        headers: {
          ...responseHeadersForClient(reply.headers, { passthroughEncoding: false }),
          'content-type': contentType(reply.headers),
        },
      })
    case 'sse':
      return new Response(sseStream(reply.events), {
        status: 200,
        headers: {
          ...responseHeadersForClient(reply.headers, { passthroughEncoding: false }),
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache',
          'x-accel-buffering': 'no',
        },
      })
    case 'upstream':
      return upstreamResponse(reply.response, passthroughEncoding)
  }
}

function contentType(headers: Record<string, string | string[]>): string {
  const value = headers['content-type']
  return (Array.isArray(value) ? value[0] : value) ?? 'application/json'
}

const RETRY_SOON: ReadonlySet<ErrorKind> = new Set(['store_unavailable', 'stopping'])

/** A failure as the door's own error body (OpenAI's shape off the doors). */
function errorResponse(c: Context, error: unknown, log: Logger, door?: Door): Response {
  if (isAbortError(error)) return c.body(null, 499 as never)
  const kind: ErrorKind = error instanceof LembasError ? error.kind : 'internal'
  const message = error instanceof Error ? error.message : String(error)
  if (kind === 'internal') log.error('internal-error', { message, stack: (error as Error).stack })
  else log.warn('request-failed', { kind, message, ...(door ? { door: door.name } : {}) })
  // Both pass: a retry in a second finds the store back, or the next process listening.
  const headers: Record<string, string> = RETRY_SOON.has(kind) ? { 'retry-after': '1' } : {}
  // The rest of a refused body is never read: the connection cannot carry another request.
  if (kind === 'body_too_large') headers['connection'] = 'close'
  const body = errorBodyOf(door, kind, message)
  return c.json(body, ERROR_KINDS[kind].status as never, headers)
}
