import { randomBytes } from 'node:crypto'
import type { ChatMessage } from '../wire/chat.js'

/**
 * The body sent upstream, kept as the bytes around its messages array: known messages are
 * spliced in as the bytes they were sent as before, and recall rounds append to the array.
 */
export interface UpstreamBody {
  /** Up to and including the array's `[`. */
  readonly before: Buffer
  /** The array's elements, joined by commas, in pieces: appending copies nothing. */
  readonly messages: readonly Buffer[]
  /** From the array's `]` on. */
  readonly after: Buffer
}

// A value no client sends: the place the messages go, found again in the serialized body.
const SLOT = `\u0000lembas-messages-${randomBytes(8).toString('hex')}`
const SLOT_JSON = JSON.stringify(SLOT)

/** The body with every field of `fields` in its order, and `messages` as its messages. */
export function buildBody(
  fields: Record<string, unknown>,
  messages: readonly Buffer[],
): UpstreamBody {
  const text = JSON.stringify({ ...fields, messages: SLOT })
  const at = text.indexOf(SLOT_JSON)
  return {
    before: Buffer.from(text.slice(0, at) + '['),
    messages,
    after: Buffer.from(']' + text.slice(at + SLOT_JSON.length)),
  }
}

/** The body's bytes, with `extra` messages appended after the known ones. */
export function bodyBytes(body: UpstreamBody, extra: readonly ChatMessage[] = []): Buffer {
  const messages =
    extra.length === 0 ? body.messages : appendMessages(body.messages, messagesText(extra))
  return Buffer.concat([body.before, ...messages, body.after])
}

/** Messages as the text of array elements. */
export function messagesText(messages: readonly ChatMessage[]): string {
  return messages.map((message) => JSON.stringify(message)).join(',')
}

/** Known message bytes with more appended; many small pieces are joined now and then. */
export function appendMessages(known: readonly Buffer[], added: string): readonly Buffer[] {
  if (added === '') return known
  const more = Buffer.from(known.length === 0 ? added : ',' + added)
  const pieces = [...known, more]
  return pieces.length > 64 ? [Buffer.concat(pieces)] : pieces
}
