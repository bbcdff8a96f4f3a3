/**
 * Token counts of a chat request, as an estimate: gpt-tokenizer's o200k_base over the tools and
 * each message in order. A request is a sequence of units (the tools, then one per message), each
 * tokenized on its own, as chat templates put each message between delimiters; so two requests
 * share a token prefix exactly as far as they share leading messages, plus the common start of
 * the first message that differs.
 */
import { createHash } from 'node:crypto'
import { encode } from 'gpt-tokenizer'
import { isRecord } from '../wire/chat.js'

/** A request's units: each one's key (a hash of its text) and its tokens. */
export interface TokenSequence {
  readonly keys: readonly string[]
  readonly tokens: readonly Uint32Array[]
  readonly total: number
}

const ENCODE_OPTIONS = { disallowedSpecial: new Set<string>() }

/** Tokenizes units once: the same message in the next request costs a hash, not a tokenization. */
export class TokenCounter {
  readonly #cache = new Map<string, Uint32Array>()
  #cachedTokens = 0

  constructor(private readonly maxCachedTokens = 50_000_000) {}

  /** The o200k tokens of one text (not cached: each is counted once). */
  count(text: string): number {
    return encode(text, ENCODE_OPTIONS).length
  }

  /** The tools (one unit, first) and the messages of a chat body. */
  sequence(body: { readonly messages?: unknown; readonly tools?: unknown }): TokenSequence {
    const units: string[] = []
    if (Array.isArray(body.tools) && body.tools.length > 0)
      units.push('tools\n' + JSON.stringify(body.tools))
    for (const message of Array.isArray(body.messages) ? body.messages : [])
      units.push(messageText(message))
    const keys: string[] = []
    const tokens: Uint32Array[] = []
    let total = 0
    for (const unit of units) {
      const key = createHash('sha1').update(unit).digest('base64')
      const unitTokens = this.#tokens(key, unit)
      keys.push(key)
      tokens.push(unitTokens)
      total += unitTokens.length
    }
    return { keys, tokens, total }
  }

  #tokens(key: string, text: string): Uint32Array {
    const known = this.#cache.get(key)
    if (known) return known
    const tokens = Uint32Array.from(encode(text, ENCODE_OPTIONS))
    this.#cache.set(key, tokens)
    this.#cachedTokens += tokens.length
    // Oldest first: a long replay keeps what the next requests are likely to repeat.
    for (const [oldKey, old] of this.#cache) {
      if (this.#cachedTokens <= this.maxCachedTokens) break
      this.#cache.delete(oldKey)
      this.#cachedTokens -= old.length
    }
    return tokens
  }
}

/** How many tokens `next` shares with the start of `previous`. */
export function commonPrefix(previous: TokenSequence, next: TokenSequence): number {
  let shared = 0
  const units = Math.min(previous.keys.length, next.keys.length)
  for (let i = 0; i < units; i++) {
    const a = previous.tokens[i]!
    const b = next.tokens[i]!
    if (previous.keys[i] === next.keys[i]) {
      shared += a.length
      continue
    }
    const n = Math.min(a.length, b.length)
    let j = 0
    while (j < n && a[j] === b[j]) j++
    return shared + j
  }
  return shared
}

/** One message as the model reads it: the role, the text, then each tool call. */
export function messageText(message: unknown): string {
  if (!isRecord(message)) return JSON.stringify(message)
  let text = String(message.role ?? '') + '\n' + contentText(message.content)
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      const fn = isRecord(call) && isRecord(call.function) ? call.function : {}
      text += `\n<call ${String(fn.name ?? '')}> ${typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? '')}`
    }
  }
  return text
}

/** Text parts joined; any other part (an image, a file) as its JSON. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return content == null ? '' : JSON.stringify(content)
  return content
    .map((part) =>
      isRecord(part) && part.type === 'text' && typeof part.text === 'string'
        ? part.text
        : JSON.stringify(part),
    )
    .join('\n')
}
