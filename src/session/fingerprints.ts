import { contentText, type ChatMessage } from '../wire/chat.js'
import { shortHash } from './identity.js'

/**
 * A tool message is known by its call id and the exact content the client sends: the same pair
 * always maps to the same stored rendering. A client that rewrites an old result changes the
 * content, so it is treated as a new message rather than mistaken for the old one.
 */
export function toolMessageKey(message: ChatMessage): string {
  return shortHash(
    (message.tool_call_id ?? '') + '\u0000' + JSON.stringify(message.content ?? null),
  )
}

/**
 * An assistant message as the client keeps it. Tool call ids are unique, so they alone name a
 * message with calls (clients re-serialise arguments); a text reply is named by its text.
 */
export function assistantKey(message: Pick<ChatMessage, 'content' | 'tool_calls'>): string {
  const calls = message.tool_calls ?? []
  if (calls.length > 0)
    return shortHash('calls\u0000' + calls.map((call) => call.id).join('\u0000'))
  return shortHash('text\u0000' + contentText(message.content).trim())
}
