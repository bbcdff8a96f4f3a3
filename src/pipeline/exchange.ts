import type { Store } from '../store/store.js'
import type { ChatMessage, ToolCall } from '../wire/chat.js'
import { assistantKey, textKeyPrefix } from '../session/fingerprints.js'
import type { SessionRef } from './history.js'
import { keys } from './records.js'

/** An assistant message as the proxy sends it upstream again: role, content, calls. */
export function upstreamAssistant(content: string | null, calls: readonly ToolCall[]): ChatMessage {
  const message: ChatMessage = { role: 'assistant', content }
  if (calls.length > 0) message.tool_calls = [...calls]
  return message
}

/**
 * Records the upstream messages a client-visible assistant message stands for, so the next
 * request puts them back in its place byte for byte. Written before the client sees the answer.
 */
export async function recordHiddenExchange(
  visible: Pick<ChatMessage, 'content' | 'tool_calls'>,
  upstreamMessages: readonly ChatMessage[],
  session: SessionRef,
  store: Store,
  previous: string | undefined,
): Promise<void> {
  const scope = session.ensure()
  const key = assistantKey(visible, previous)
  await store.putIfAbsent(scope, [
    [keys.hidden(key), JSON.stringify({ messages: upstreamMessages })],
  ])
  // A text reply is too common to name a session by ("Done."): only tool call ids do that.
  if (!session.identity.explicit && !key.startsWith(textKeyPrefix)) {
    await store.putIfAbsent(session.identity.tenant, [[keys.ownerOfAssistant(key), scope]])
  }
}
