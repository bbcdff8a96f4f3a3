import type { ContextRules } from '../context/index.js'
import type { Logger } from '../log.js'
import type { Store } from '../store/store.js'
import type { Upstream } from '../upstream/index.js'
import type { ChatMessage, ChatRequest, ToolCall } from '../wire/chat.js'
import type { SessionRef } from './history.js'
import type { RecallSetup } from './recall.js'
import { bodyBytes, type UpstreamBody } from './upstream-body.js'

/** Everything one chat request's upstream exchange needs. */
export interface Turn {
  /** The client's request fields (stream, stream_options, …). */
  readonly request: ChatRequest
  /** What goes upstream; recall rounds append to its messages. */
  readonly body: UpstreamBody
  readonly headers: Record<string, string>
  readonly session: SessionRef
  /** The key of the client's last message: a text reply's hidden exchange is tied to it. */
  readonly lastMessage: string | undefined
  readonly signal: AbortSignal
  /** Null when the client defines its own `recall` or sends no tools: nothing is intercepted. */
  readonly recall: RecallSetup | null
  readonly upstream: Upstream
  readonly store: Store
  readonly rules: ContextRules
  readonly log: Logger
}

export function isRecallCall(turn: Turn, call: Pick<ToolCall, 'function'>): boolean {
  return turn.recall !== null && call.function.name === turn.recall.name
}

/** Sends the turn's body, with the messages of earlier recall rounds appended. */
export function sendChat(turn: Turn, extra: readonly ChatMessage[] = []) {
  return turn.upstream.send({
    method: 'POST',
    path: '/chat/completions',
    headers: { ...turn.headers, 'content-type': 'application/json' },
    body: bodyBytes(turn.body, extra),
    signal: turn.signal,
  })
}
