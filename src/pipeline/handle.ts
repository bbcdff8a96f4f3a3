import { LembasError } from '../errors.js'
import type { Logger } from '../log.js'
import {
  upstreamUsage,
  type Meter,
  type RebuildCounts,
  type StatsCollector,
} from '../stats/index.js'
import { isAbortError } from '../upstream/index.js'
import type { Upstream, UpstreamResponse } from '../upstream/index.js'
import type { SessionRef } from './history.js'
import { completeChat } from './complete.js'
import { sendChat, type Turn } from './context.js'
import { prepareChat, type PrepareDeps } from './prepare.js'
import { streamChat } from './stream.js'
import { bodyBytes } from './upstream-body.js'

export interface PipelineDeps extends PrepareDeps {
  readonly upstream: Upstream
  readonly log: Logger
  /** Sees each chat request as received and as sent upstream (`--record`). */
  readonly recorder?: Recorder | undefined
  /** Sees each finished request (`GET /stats`, `GET /metrics`). */
  readonly stats?: StatsCollector | undefined
}

/** Where `--record` writes: the client's body and the upstream body, per request. */
export interface Recorder {
  record(entry: {
    readonly session: string | undefined
    readonly received: string
    readonly sent: string
  }): void
}

/** A reply for the HTTP layer: a whole body, an SSE stream, or the upstream's own response. */
export type Reply =
  | {
      readonly kind: 'text'
      readonly status: number
      readonly headers: Record<string, string | string[]>
      readonly body: string
    }
  | {
      readonly kind: 'sse'
      readonly headers: Record<string, string | string[]>
      readonly events: AsyncGenerator<string>
    }
  | { readonly kind: 'upstream'; readonly response: UpstreamResponse }

export interface ChatInput {
  /** The client's body, as it came. */
  readonly rawBody: Buffer
  /** The client's headers: identity, session and compaction signals. */
  readonly clientHeaders: Headers
  /** The headers that go upstream (allowlisted). */
  readonly headers: Record<string, string>
  readonly signal: AbortSignal
  /** The compaction header's value, when the client sent it. */
  readonly compactionSignal?: string | undefined
}

/**
 * One chat-completions request: find the session, rebuild the history (known results as first
 * sent, new ones rendered and stored), add recall, forward, and answer recall calls.
 */
export async function handleChat(input: ChatInput, deps: PipelineDeps): Promise<Reply> {
  const started = Date.now()
  const seen: Seen = { meter: { recalls: 0 }, stream: false, messages: 0 }
  let reply: Reply
  try {
    reply = await chat(input, deps, seen, started)
  } catch (error) {
    const status = isAbortError(error) ? 499 : error instanceof LembasError ? error.status : 500
    const upstreamError = error instanceof LembasError && error.kind.startsWith('upstream_')
    finished(deps, seen, started, status, upstreamError)
    throw error
  }
  if (reply.kind === 'sse') {
    const events = reply.events
    return { ...reply, events: untilEnd(events, () => finished(deps, seen, started, 200)) }
  }
  const status = reply.kind === 'text' ? reply.status : reply.response.status
  finished(deps, seen, started, status, status >= 400)
  return reply
}

/** What is known of a request so far, for its log line and its stats. */
interface Seen {
  /** Read at the end: a recall may create the session's scope. */
  session?: SessionRef | undefined
  rebuild?: RebuildCounts | undefined
  stream: boolean
  messages: number
  meter: Meter
}

/** A stream is finished when its generator is: done, failed, or closed by the client. */
async function* untilEnd(events: AsyncGenerator<string>, done: () => void): AsyncGenerator<string> {
  try {
    yield* events
  } finally {
    done()
  }
}

/** The request's one info line, and its record in the stats. Counts and ids only. */
function finished(
  deps: PipelineDeps,
  seen: Seen,
  started: number,
  status: number,
  upstreamError = false,
): void {
  const ms = Date.now() - started
  const { meter, rebuild } = seen
  const failed = upstreamError || meter.failed === true
  const usage = upstreamUsage(meter.usage, meter.timings)
  deps.log.info('request', {
    session: seen.session?.scope,
    messages: seen.messages,
    newResults: rebuild?.newResults ?? 0,
    stubs: rebuild?.stubs ?? 0,
    dedupes: rebuild?.dedupes ?? 0,
    caps: rebuild?.caps ?? 0,
    charsSaved: rebuild?.charsSaved ?? 0,
    recalls: meter.recalls,
    status,
    ...(meter.failed ? { failed: true } : {}),
    ms,
    stream: seen.stream,
    spliced: rebuild?.spliced ?? 0,
    promptTokens: usage.promptTokens,
    cachedTokens: usage.cachedTokens,
  })
  deps.stats?.recordRequest({
    session: seen.session?.scope,
    rebuild,
    status,
    ms,
    stream: seen.stream,
    usage: meter.usage,
    timings: meter.timings,
    recalls: meter.recalls,
    upstreamError: failed,
  })
}

async function chat(
  input: ChatInput,
  deps: PipelineDeps,
  seen: Seen,
  started: number,
): Promise<Reply> {
  const prepared = await prepareChat(
    input.rawBody,
    input.clientHeaders,
    input.compactionSignal,
    deps,
  )
  seen.stream = prepared.request.stream === true
  seen.messages = prepared.request.messages.length
  if (prepared.kind === 'plain') {
    // A plain chat: no tools, so no tool results to shape and no recall to offer.
    const response = await deps.upstream.send({
      method: 'POST',
      path: '/chat/completions',
      headers: { ...input.headers, 'content-type': 'application/json' },
      body: input.rawBody,
      signal: input.signal,
    })
    return { kind: 'upstream', response }
  }
  const { request, session } = prepared
  seen.session = session
  seen.rebuild = prepared.stats
  if (!prepared.recall) {
    deps.log.warn('recall-left-to-client', {
      reason: `the client defines a tool named ${deps.recall.name}`,
    })
  }
  deps.recorder?.record({
    session: session.scope,
    received: input.rawBody.toString('utf8'),
    sent: bodyBytes(prepared.body).toString('utf8'),
  })
  deps.log.debug('rebuilt', {
    session: session.scope,
    ...prepared.stats,
    stream: request.stream === true,
    rebuild_ms: Date.now() - started,
  })
  const turn: Turn = {
    request,
    body: prepared.body,
    headers: input.headers,
    session,
    lastMessage: prepared.lastMessage,
    signal: input.signal,
    recall: prepared.recall ? deps.recall : null,
    upstream: deps.upstream,
    store: deps.store,
    rules: deps.rules,
    log: deps.log,
  }
  if (request.stream !== true) return { kind: 'text', ...(await completeChat(turn, seen.meter)) }
  const first = await sendChat(turn)
  if (first.status !== 200) return { kind: 'upstream', response: first }
  return { kind: 'sse', headers: first.headers, events: streamChat(turn, first, seen.meter) }
}
