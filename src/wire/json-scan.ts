/**
 * Finds a top-level array ("messages", "input") in a request's JSON bytes without parsing it, so
 * a request that repeats a known history can be handled in time proportional to what is new.
 * One pass over the bytes; strings and escapes are skipped, brackets counted. Working on UTF-8
 * bytes is exact: every byte of a multi-byte character is >= 0x80, never a quote or a bracket.
 */
import { pacer } from '../pace/index.js'

export interface MessagesSpan {
  /** Index of the array's `[`. */
  readonly arrayStart: number
  /** Index of the array's `]`. */
  readonly arrayEnd: number
  /** Index just after the last element (arrayStart + 1 when the array is empty). */
  readonly lastEnd: number
  /** Index just after each of the last elements (up to `keep` of them), oldest first. */
  readonly ends: readonly number[]
}

/** Bytes scanned between two chances for the event loop to serve others. */
const STEP = 1 << 19

export async function arraySpan(
  bytes: Buffer,
  key: string,
  keep = 1,
): Promise<MessagesSpan | undefined> {
  const name = Buffer.from(key)
  const pace = pacer()
  let depth = 0
  let check = STEP
  for (let i = 0; i < bytes.length; i++) {
    if (i >= check) {
      await pace()
      check = i + STEP
    }
    const code = bytes[i]!
    if (code === 34 /* " */) {
      const end = closingQuote(bytes, i + 1)
      if (end === -1) return undefined
      if (depth === 1 && isKey(bytes, i + 1, end, name)) {
        let j = skipSpace(bytes, end + 1)
        if (bytes[j] !== 58 /* : */) return undefined
        j = skipSpace(bytes, j + 1)
        if (bytes[j] !== 91 /* [ */) return undefined
        const tail = await arrayTail(bytes, j + 1, keep)
        return tail && { arrayStart: j, ...tail }
      }
      i = end
    } else if (code === 123 || code === 91) depth++
    else if (code === 125 || code === 93) depth--
  }
  return undefined
}

/**
 * The index of the quote that closes a string whose content starts at `from`, or -1 when the
 * text ends first; in the decoded text or in its UTF-8 bytes (a quote and a backslash are one
 * unit in both). The content (most of a request: tool output) is skipped with a native search
 * for the next quote, not unit by unit: three to five times faster. A quote is escaped when an
 * odd run of backslashes stands before it (the run cannot reach past the opening quote).
 */
export function closingQuote(source: string | Buffer, from: number): number {
  const text = typeof source === 'string'
  let quote = text ? source.indexOf('"', from) : source.indexOf(34, from)
  while (quote !== -1) {
    let slashes = 0
    while ((text ? source.charCodeAt(quote - 1 - slashes) : source[quote - 1 - slashes]) === 92)
      slashes++
    if (slashes % 2 === 0) return quote
    quote = text ? source.indexOf('"', quote + 1) : source.indexOf(34, quote + 1)
  }
  return -1
}

/**
 * From just inside an array (after `[` or after an element), the index of its closing `]` and
 * the index just after its last element. Paced: a body of many megabytes (or one huge string in
 * it) is scanned in steps, with the event loop free between them.
 */
export async function arrayTail(
  bytes: Buffer,
  from: number,
  keep = 1,
): Promise<{ arrayEnd: number; lastEnd: number; ends: number[] } | undefined> {
  const pace = pacer()
  let depth = 0
  let lastEnd = from
  let check = from + STEP
  const ends: number[] = []
  // An element ends at the comma (or `]`) after it: its end is then known for good.
  const close = () => {
    if (lastEnd === from || ends.at(-1) === lastEnd) return
    ends.push(lastEnd)
    if (ends.length > keep) ends.shift()
  }
  for (let i = from; i < bytes.length; i++) {
    if (i >= check) {
      await pace()
      check = i + STEP
    }
    const code = bytes[i]!
    if (code === 34) {
      const end = closingQuote(bytes, i + 1)
      if (end === -1) return undefined
      if (depth === 0) lastEnd = end + 1
      i = end
    } else if (code === 123 || code === 91) depth++
    else if (code === 125 || code === 93) {
      if (depth === 0) {
        close()
        return code === 93 ? { arrayEnd: i, lastEnd, ends } : undefined
      }
      depth--
      if (depth === 0) lastEnd = i + 1
    } else if (depth === 0 && code === 44) close()
    else if (depth === 0 && code > 32) {
      lastEnd = i + 1 // a bare number, true, false or null element
    }
  }
  return undefined
}

function isKey(text: Uint8Array, start: number, end: number, name: Uint8Array): boolean {
  return end - start === name.length && name.every((byte, k) => text[start + k] === byte)
}

export function skipSpace(text: Uint8Array, from: number): number {
  let i = from
  while (i < text.length) {
    const code = text[i]
    if (code !== 32 && code !== 10 && code !== 13 && code !== 9) break
    i++
  }
  return i
}
