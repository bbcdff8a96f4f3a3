/**
 * What a thinking model says besides its text, on Chat Completions: DeepSeek's and llama.cpp's
 * `reasoning_content`, OpenRouter's and vLLM's `reasoning`, OpenRouter's `reasoning_details`
 * (signed blocks). Such a model needs it back with its tool calls: DeepSeek refuses a tool-call
 * turn without it (400 "Missing `reasoning_content` field"), and Claude or Gemini through
 * OpenRouter lose their thinking. A recall round sends it back as the upstream gave it.
 */
import { isRecord } from '../../wire/chat.js'
import type { Json, Part } from '../../pipeline/door.js'

/** Fields of an assistant message that carry its reasoning as text. */
const TEXT_FIELDS = ['reasoning_content', 'reasoning'] as const
/** OpenRouter's array of blocks; streamed as pieces of a block with its `index`. */
const DETAILS = 'reasoning_details'
/** Text that a streamed block's pieces carry, joined; other fields (a signature) the last piece's. */
const DETAIL_TEXTS = ['text', 'summary', 'data'] as const

/**
 * A round's reasoning, gathered from a whole message or from its stream's deltas (`pieces`:
 * consecutive details of one `index` are pieces of one block).
 */
export class Reasoning {
  readonly #texts = new Map<string, string>()
  readonly #details: Json[] = []

  constructor(private readonly pieces = false) {}

  /** Adds what a message or a delta carries. */
  take(source: Json): void {
    for (const field of TEXT_FIELDS) {
      const value = source[field]
      if (typeof value === 'string') this.#texts.set(field, (this.#texts.get(field) ?? '') + value)
    }
    const details = source[DETAILS]
    if (Array.isArray(details)) for (const detail of details) this.#detail(detail)
  }

  #detail(detail: unknown): void {
    if (!isRecord(detail)) return
    const last = this.#details.at(-1)
    const samePiece =
      this.pieces &&
      last !== undefined &&
      typeof detail.index === 'number' &&
      last.index === detail.index
    if (!samePiece) return void this.#details.push({ ...detail })
    for (const [key, value] of Object.entries(detail)) {
      const joined = (DETAIL_TEXTS as readonly string[]).includes(key)
      last[key] =
        joined && typeof value === 'string' && typeof last[key] === 'string'
          ? last[key] + value
          : value
    }
  }

  /** The reasoning as a part of the round (none when the model said none). */
  part(): Part[] {
    const raw: Json = Object.fromEntries(this.#texts)
    if (this.#details.length > 0) raw[DETAILS] = this.#details
    return Object.keys(raw).length === 0 ? [] : [{ raw: { reasoning: raw } }]
  }
}

/** The reasoning fields of an assistant message, over its parts (the rounds' one after another). */
export function reasoningFields(parts: readonly Part[]): Json {
  const all = new Reasoning()
  for (const part of parts) if (isRecord(part.raw.reasoning)) all.take(part.raw.reasoning)
  const [joined] = all.part()
  return joined ? (joined.raw.reasoning as Json) : {}
}
