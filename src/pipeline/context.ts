import type { ContextRules } from '../context/index.js'
import type { Logger } from '../log.js'
import type { Store } from '../store/store.js'
import type { Upstream } from '../upstream/index.js'
import type { ChatRequest, ToolCall } from '../wire/chat.js'
import type { SessionRef } from './history.js'
import type { RecallSetup } from './recall.js'

/** Everything one chat request's upstream exchange needs. */
export interface Turn {
  readonly body: ChatRequest
  readonly headers: Record<string, string>
  readonly session: SessionRef
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

export function sendChat(turn: Turn, body: ChatRequest) {
  return turn.upstream.send({
    method: 'POST',
    path: '/chat/completions',
    headers: { ...turn.headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: turn.signal,
  })
}
