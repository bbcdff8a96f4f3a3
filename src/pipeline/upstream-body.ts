import { randomBytes } from 'node:crypto'
import type { ChatMessage } from '../wire/chat.js'

/**
 * The body sent upstream, kept as the text around its messages array: known messages are
 * spliced in as the bytes they were sent as before, and recall rounds append to the array.
 */
export interface UpstreamBody {
  /** The text up to and including the array's `[`. */
  readonly before: string
  /** The array's elements, joined by commas. */
  readonly messages: string
  /** The text from the array's `]` on. */
  readonly after: string
}

// A value no client sends: the place the messages go, found again in the serialized body.
const SLOT = `\u0000lembas-messages-${randomBytes(8).toString('hex')}`
const SLOT_JSON = JSON.stringify(SLOT)

/** The body with every field of `fields` in its order, and `messagesText` as its messages. */
export function buildBody(fields: Record<string, unknown>, messagesText: string): UpstreamBody {
  const text = JSON.stringify({ ...fields, messages: SLOT })
  const at = text.indexOf(SLOT_JSON)
  return {
    before: text.slice(0, at) + '[',
    messages: messagesText,
    after: ']' + text.slice(at + SLOT_JSON.length),
  }
}

/** The body's text, with `extra` messages appended after the known ones. */
export function bodyText(body: UpstreamBody, extra: readonly ChatMessage[] = []): string {
  const more = extra.map((message) => JSON.stringify(message)).join(',')
  const separator = body.messages !== '' && more !== '' ? ',' : ''
  return body.before + body.messages + separator + more + body.after
}

/** The messages of a rebuilt list as the text of the array's elements. */
export function messagesText(messages: readonly ChatMessage[]): string {
  return messages.map((message) => JSON.stringify(message)).join(',')
}
