/**
 * The history-rewriting baseline: what an agent that prunes its own history sends. Every tool
 * result older than the last `keep` turns is replaced by a placeholder, as opencode prunes
 * ("[Old tool result content cleared]"). Each new turn clears the results of the turn that just
 * fell out of the window, so the history changes under the cache from there on.
 */
import { isRecord } from '../wire/chat.js'

export const CLEARED = '[Old tool result content cleared]'

/**
 * What starts a turn: `user`, a user message (opencode's rule: the last two user turns keep
 * their results); `step`, every assistant message (observation masking per agent step; an
 * autonomous run with one prompt has one user turn, so `user` clears nothing there).
 */
export type TurnUnit = 'user' | 'step'

export interface MaskOptions {
  readonly keep: number
  readonly unit: TurnUnit
  readonly text?: string
}

/** The messages with the tool results before the last `keep` turns cleared (a copy; shapes kept). */
export function maskOldToolResults(messages: readonly unknown[], options: MaskOptions): unknown[] {
  const role = options.unit === 'user' ? 'user' : 'assistant'
  let seen = 0
  let boundary = options.keep <= 0 ? messages.length : -1
  for (let i = messages.length - 1; i >= 0 && boundary < 0; i--) {
    const message = messages[i]
    if (isRecord(message) && message.role === role && ++seen === options.keep) {
      boundary = i
      break
    }
  }
  if (boundary < 0) return [...messages]
  const text = options.text ?? CLEARED
  return messages.map((message, i) => {
    if (i >= boundary || !isRecord(message) || message.role !== 'tool') return message
    return { ...message, content: cleared(message.content, text) }
  })
}

/** A string stays a string; parts become one text part. */
function cleared(content: unknown, text: string): unknown {
  return Array.isArray(content) ? [{ type: 'text', text }] : text
}
