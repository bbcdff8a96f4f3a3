import type { Logger } from '../log.js'
import type { Upstream, UpstreamResponse } from '../upstream/index.js'
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
  const prepared = await prepareChat(
    input.rawBody,
    input.clientHeaders,
    input.compactionSignal,
    deps,
  )
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
  deps.log.info('request', {
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
    signal: input.signal,
    recall: prepared.recall ? deps.recall : null,
    upstream: deps.upstream,
    store: deps.store,
    rules: deps.rules,
    log: deps.log,
  }
  if (request.stream !== true) return { kind: 'text', ...(await completeChat(turn)) }
  const first = await sendChat(turn)
  if (first.status !== 200) return { kind: 'upstream', response: first }
  return { kind: 'sse', headers: first.headers, events: streamChat(turn, first) }
}
