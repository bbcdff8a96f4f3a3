import { randomBytes } from 'node:crypto'

/**
 * The body sent upstream, kept as the bytes around its array of items: known items are spliced
 * in as the bytes they were sent as before, and recall rounds append to the array.
 */
export interface UpstreamBody {
  /** Up to and including the array's `[`. */
  readonly before: Buffer
  /** The array's elements, joined by commas, in pieces: appending copies nothing. */
  readonly items: readonly Buffer[]
  /** From the array's `]` on. */
  readonly after: Buffer
}

// A value no client sends: the place the items go, found again in the serialized body.
const SLOT = `\u0000lembas-items-${randomBytes(8).toString('hex')}`
const SLOT_JSON = JSON.stringify(SLOT)

/** The bytes around a body's `key` array: every field of `fields`, in its order. */
export function framing(fields: Record<string, unknown>, key: string): Omit<UpstreamBody, 'items'> {
  const text = JSON.stringify({ ...fields, [key]: SLOT })
  const at = text.indexOf(SLOT_JSON)
  return {
    before: Buffer.from(text.slice(0, at) + '['),
    after: Buffer.from(']' + text.slice(at + SLOT_JSON.length)),
  }
}

/** The body's bytes, with `extra` items appended after the known ones. */
export function bodyBytes(body: UpstreamBody, extra: readonly unknown[] = []): Buffer {
  const items = extra.length === 0 ? body.items : appendItems(body.items, itemsText(extra))
  return Buffer.concat([body.before, ...items, body.after])
}

/** Items as the text of array elements. */
export function itemsText(items: readonly unknown[]): string {
  return items.map((item) => JSON.stringify(item)).join(',')
}

/** The bytes of items kept in pieces. */
export function piecesBytes(pieces: readonly Buffer[]): number {
  return pieces.reduce((sum, piece) => sum + piece.length, 0)
}

/** Known item bytes with more appended (the body is joined once, when it is sent). */
export function appendItems(known: readonly Buffer[], added: string): readonly Buffer[] {
  if (added === '') return known
  return [...known, Buffer.from(known.length === 0 ? added : ',' + added)]
}
