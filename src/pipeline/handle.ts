import type { ContextRules } from '../context/index.js'
import { LembasError } from '../errors.js'
import type { Logger } from '../log.js'
import { shortHash, type Identity } from '../session/identity.js'
import { signalledSummary, summaryIndices } from '../session/compaction.js'
import type { Store } from '../store/store.js'
import type { Profile } from '../tools/index.js'
import type { Upstream, UpstreamResponse } from '../upstream/index.js'
import { contentText, type ChatMessage, type ChatRequest } from '../wire/chat.js'
import type { Workspace } from '../workspace/index.js'
import { completeChat } from './complete.js'
import { sendChat, type Turn } from './context.js'
import { findSession, rebuildHistory } from './history.js'
import type { RecallSetup } from './recall.js'
import { streamChat } from './stream.js'

export interface PipelineDeps {
  readonly store: Store
  readonly upstream: Upstream
  readonly workspace?: Workspace | undefined
  readonly rules: ContextRules
  readonly profile: Profile
  readonly promptBlock: string
  readonly recall: RecallSetup
  readonly log: Logger
  /** After a compaction without a session id, a session active this recently continues. */
  readonly continueWithinMs: number
  readonly now?: () => number
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
  readonly request: ChatRequest
  /** The client's bytes, forwarded as they are when there is nothing to rewrite. */
  readonly rawBody: string
  readonly identity: Identity
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
  const { request } = input
  const tools = request.tools ?? []
  if (tools.length === 0) {
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
  const clientHasRecall = tools.some((tool) => tool.function?.name === deps.recall.name)
  if (clientHasRecall)
    deps.log.warn('recall-left-to-client', {
      reason: `the client defines a tool named ${deps.recall.name}`,
    })

  const started = Date.now()
  const continuity = {
    summaries: summaryIndices(
      request.messages,
      deps.profile.compaction,
      signalledSummary(input.compactionSignal, request.messages),
    ),
    systemKey: systemKey(request.messages, deps.profile),
    withinMs: deps.continueWithinMs,
    now: (deps.now ?? Date.now)(),
  }
  const session = await findSession(request.messages, input.identity, deps.store, continuity)
  const rebuilt = await rebuildHistory(request.messages, tools, session, deps, continuity)
  const body: ChatRequest = {
    ...request,
    messages: rebuilt.messages,
    tools: clientHasRecall ? tools : [...tools, deps.recall.tool],
  }
  deps.log.info('request', {
    session: session.scope,
    messages: request.messages.length,
    ...rebuilt.stats,
    stream: request.stream === true,
    rebuild_ms: Date.now() - started,
  })
  const turn: Turn = {
    body,
    headers: input.headers,
    session,
    signal: input.signal,
    recall: clientHasRecall ? null : deps.recall,
    upstream: deps.upstream,
    store: deps.store,
    rules: deps.rules,
    log: deps.log,
  }
  if (request.stream !== true) return { kind: 'text', ...(await completeChat(turn)) }
  const first = await sendChat(turn, body)
  if (first.status !== 200) return { kind: 'upstream', response: first }
  return { kind: 'sse', headers: first.headers, events: streamChat(turn, first) }
}

/** The system prompt's fingerprint, cut before a summary an agent put into it (Continue). */
function systemKey(messages: readonly ChatMessage[], profile: Profile): string {
  const system = messages.find((message) => message.role === 'system')
  let text = system ? contentText(system.content) : ''
  for (const marker of profile.compaction) {
    if (marker.role !== 'system') continue
    const at = text.search(marker.pattern)
    if (at >= 0) text = text.slice(0, at)
  }
  return shortHash(text)
}

/** JSON.stringify throws on very deep nesting; such a body is the client's error, not ours. */
export function assertSerializable(value: unknown): void {
  try {
    JSON.stringify(value)
  } catch (error) {
    throw new LembasError(
      'invalid_request',
      `the request cannot be forwarded: ${(error as Error).message}`,
    )
  }
}
