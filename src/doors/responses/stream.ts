import { openAIErrorBody, type ErrorKind } from '../../errors.js'
import { parseEvent } from '../event.js'
import { isRecord } from '../../wire/chat.js'
import { SSE_DONE, type SseEvent } from '../../wire/sse.js'
import {
  upstreamError,
  type DoorStream,
  type Json,
  type Part,
  type RoundEnd,
  type UpstreamError,
} from '../../pipeline/door.js'
import { partOf, textItem } from './index.js'

const TERMINAL = new Set(['response.completed', 'response.incomplete'])

/**
 * A Responses stream across recall rounds, in its event grammar: events flow through as they
 * come but those of a recall call; later items are renumbered; one final `response.completed`.
 */
export class ResponsesStream implements DoorStream {
  #round = 0
  #sequence = 0
  #clientIndex = 0
  #responseId: unknown
  #items = new RoundItems()
  #completed: Json | undefined
  #final: Json | undefined
  #lastCompleted: Json | undefined

  constructor(private readonly isRecall: (name: string) => boolean) {}

  #emit(event: Json): string {
    if ('sequence_number' in event) event.sequence_number = this.#sequence++
    return `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`
  }

  take(sse: SseEvent): { out: string[]; stop?: boolean } {
    if (sse.data === SSE_DONE) return { out: [] }
    const event = parseEvent(sse.data)
    const type = event.type
    // Not the Responses grammar: an `{"error":…}` (as chat servers send it) ends the stream as
    // the door's failure, with the upstream's own code; anything else without a type is no event.
    if (typeof type !== 'string') {
      const own = upstreamError(event)
      if (!own) return { out: [] }
      return {
        out: [this.error('upstream_bad_response', own.message ?? 'the upstream failed', own)],
        stop: true,
      }
    }
    if (type === 'response.created' || type === 'response.in_progress') {
      if (this.#round > 0) return { out: [] }
      if (isRecord(event.response)) this.#responseId ??= event.response.id
      return { out: [this.#emit(event)] }
    }
    if (typeof type === 'string' && TERMINAL.has(type)) {
      this.#completed = event
      return { out: [] }
    }
    if (type === 'response.failed' || type === 'error')
      return { out: [this.#emit(event)], stop: true }
    const item = this.#items.of(type, event)
    if (item) {
      if (isRecord(event.item) && event.item.type === 'function_call')
        item.hidden ||= this.isRecall(String(event.item.name))
      if (item.hidden) return { out: [] }
      item.clientIndex ??= this.#clientIndex++
      if (typeof event.output_index === 'number') event.output_index = item.clientIndex
    }
    return { out: [this.#emit(event)] }
  }

  endRound(): RoundEnd {
    const completed = this.#completed
    const final = isRecord(completed?.response) ? completed.response : undefined
    const output = Array.isArray(final?.output) ? final.output.filter(isRecord) : []
    const items = this.#items.finished(output)
    // Sent only when nothing was recalled: then it is the stream's last event.
    const held = completed ? [this.#emit({ ...completed })] : []
    if (completed && 'sequence_number' in completed) this.#sequence--
    const end: RoundEnd = {
      parts: items.map(partOf),
      usage: final?.usage,
      held,
      complete: completed !== undefined,
    }
    this.#final = final
    this.#lastCompleted = completed
    this.#round++
    this.#items = new RoundItems()
    this.#completed = undefined
    return end
  }

  close(visible: readonly Part[], usage: unknown): string[] {
    const end: Json = {
      ...(this.#lastCompleted ?? { type: 'response.completed', sequence_number: 0 }),
    }
    end.response = {
      ...(this.#final ?? {}),
      ...(this.#responseId === undefined ? {} : { id: this.#responseId }),
      output: visible.map((part) => part.raw),
      ...(usage === undefined ? {} : { usage }),
    }
    return [this.#emit(end)]
  }

  say(text: string): string[] {
    const output_index = this.#clientIndex++
    const item = textItem(text)
    const part = { type: 'output_text', text: '', annotations: [] }
    const at = { output_index, content_index: 0 }
    const events: Json[] = [
      {
        type: 'response.output_item.added',
        output_index,
        item: { ...item, status: 'in_progress', content: [] },
      },
      { type: 'response.content_part.added', ...at, part },
      { type: 'response.output_text.delta', ...at, delta: text },
      { type: 'response.output_text.done', ...at, text },
      { type: 'response.content_part.done', ...at, part: { ...part, text } },
      { type: 'response.output_item.done', output_index, item },
    ]
    return events.map((event) => this.#emit({ ...event, sequence_number: 0 }))
  }

  error(kind: ErrorKind, message: string, own?: UpstreamError): string {
    const body = openAIErrorBody(kind, message).error
    return this.#emit({
      type: 'response.failed',
      sequence_number: 0,
      response: {
        id: this.#responseId,
        status: 'failed',
        error: { code: failureCode(kind, body.message, own), message: body.message },
      },
    })
  }
}

/** An output item of a round, as its events tell it. */
interface RoundItem {
  /** A recall call: none of its events reach the client. */
  hidden: boolean
  /** Its `output_index` for the client, once one of its events went out. */
  clientIndex?: number
  added?: Json
  done?: Json
}

/**
 * A round's output items, told apart by their ids as much as by their `output_index`: llama.cpp
 * sends no `output_index` at all (a call's arguments name it by `item_id` alone), LiteLLM puts a
 * reasoning item and a message at the same index, Ollama a message and the call after it.
 */
class RoundItems {
  readonly #all: RoundItem[] = []
  readonly #byId = new Map<string, RoundItem>()
  readonly #byIndex = new Map<number, RoundItem>()

  /** The item an event is about, new with an `output_item.added`; undefined for none. */
  of(type: string, event: Json): RoundItem | undefined {
    const named = isRecord(event.item) ? event.item : undefined
    const ids = [named?.id, named?.call_id, event.item_id].filter(
      (id): id is string => typeof id === 'string' && id !== '',
    )
    const at = typeof event.output_index === 'number' ? event.output_index : undefined
    let item: RoundItem | undefined
    if (type !== 'response.output_item.added') {
      item = ids.map((id) => this.#byId.get(id)).find((found) => found !== undefined)
      // An event without an id of its own is the newest item's at its index.
      if (!item && ids.length === 0 && at !== undefined) item = this.#byIndex.get(at)
    }
    if (!item) {
      if (!named && ids.length === 0 && at === undefined) return undefined
      item = { hidden: false }
      this.#all.push(item)
    }
    for (const id of ids) this.#byId.set(id, item)
    if (at !== undefined) this.#byIndex.set(at, item)
    if (named && type === 'response.output_item.added') item.added = named
    if (named && type === 'response.output_item.done') item.done = named
    return item
  }

  /**
   * The round's items, as the upstream will see them again: each as its `output_item.done` gave
   * it; where one never came (Ollama leaves a message before a call so), the round's
   * `response.completed` output, which holds them all.
   */
  finished(output: readonly Json[]): Json[] {
    if (this.#all.length === 0) return [...output]
    if (this.#all.some((item) => !item.done) && output.length > 0) return [...output]
    return this.#all.flatMap((item) => {
      const whole = item.done ?? item.added
      return whole ? [whole] : []
    })
  }
}

/** The words servers use for a prompt longer than the model's window. */
const CONTEXT_TOO_LONG =
  /context[_ ]?(length|size|window)|maximum context|prompt is too long|too many tokens/i

/**
 * A failure's code as Codex goes by it: the upstream's own where it is a word; a prompt too
 * long for the window as OpenAI says it (`context_length_exceeded`: Codex stops, where it tries
 * an unknown code again, and a recall round is where a prompt grows past the window); a rate
 * limit likewise; else the upstream's type, or the proxy's kind.
 */
function failureCode(kind: ErrorKind, message: string, own?: UpstreamError): string {
  if (own?.code !== undefined && !/^\d+$/.test(own.code)) return own.code
  if (CONTEXT_TOO_LONG.test(`${own?.type ?? ''} ${message}`)) return 'context_length_exceeded'
  if (own?.status === 429 || own?.code === '429') return 'rate_limit_exceeded'
  return own?.type ?? kind
}
