import { contentText, withoutMarkers, type ChatMessage } from '../wire/chat.js'
import { createHash } from 'node:crypto'
import { sliceEnd, TEXT_SLICE } from '../context/index.js'
import { shortDigest, shortHash } from './identity.js'

/**
 * A tool message is known by its call id and the exact content the client sends: the same pair
 * always maps to the same stored rendering. A client that rewrites an old result changes the
 * content, so it is treated as a new message rather than mistaken for the old one. A part's
 * `cache_control` is no content: clients move that marker to the newest message every turn
 * (Qwen Code on DashScope), and the result it left is the same result, shown as before.
 */
export function toolMessageKey(message: ChatMessage): string {
  return shortHash(
    (message.tool_call_id ?? '') +
      '\u0000' +
      JSON.stringify(message.content ?? null, withoutMarkers),
  )
}

/** Text content past this many characters is keyed in slices, with pauses between. */
const SLICED_CHARS = 1 << 20

/**
 * toolMessageKey, the same key, for any size of result without holding the event loop: a
 * text of megabytes is escaped and hashed a slice at a time (its JSON escapes character by
 * character, and no slice ends inside a surrogate pair), `pace` called between slices.
 */
export async function toolMessageKeyPaced(
  message: ChatMessage,
  pace: () => Promise<void> | undefined,
): Promise<string> {
  const content = message.content
  if (typeof content !== 'string' || content.length <= SLICED_CHARS) return toolMessageKey(message)
  const hash = createHash('sha256').update((message.tool_call_id ?? '') + '\u0000"')
  for (let at = 0; at < content.length;) {
    await pace()
    const end = sliceEnd(content, at, TEXT_SLICE)
    hash.update(JSON.stringify(content.slice(at, end)).slice(1, -1))
    at = end
  }
  return shortDigest(hash.update('"'))
}

/**
 * An assistant message as the client keeps it. Tool call ids are unique, so they alone name a
 * message with calls (clients re-serialise arguments). A text reply ("Done.") is not unique: it
 * is named by its text and the message before it (`previous`, a messageKey).
 */
export function assistantKey(
  message: Pick<ChatMessage, 'content' | 'tool_calls'>,
  previous: string | undefined,
): string {
  const calls = message.tool_calls ?? []
  if (calls.length > 0)
    return shortHash('calls\u0000' + calls.map((call) => call.id).join('\u0000'))
  return (
    textKeyPrefix +
    shortHash('text\u0000' + (previous ?? '') + '\u0000' + contentText(message.content).trim())
  )
}

/** Keys of text replies start so: they never name a session on their own (see history.ts). */
export const textKeyPrefix = 't.'

/** Any message, by its role and content: what a text reply's key is tied to. */
export function messageKey(message: ChatMessage): string {
  return message.role === 'tool'
    ? toolMessageKey(message)
    : shortHash(message.role + '\u0000' + JSON.stringify(message.content ?? null))
}
