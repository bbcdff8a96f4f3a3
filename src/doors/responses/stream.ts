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
  #hidden = new Set<number>()
  #indices = new Map<number, number>()
  #done = new Map<number, Json>()
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
    if (typeof event.output_index === 'number') {
      const at = event.output_index
      const item = event.item
      if (
        type === 'response.output_item.added' &&
        isRecord(item) &&
        item.type === 'function_call' &&
        this.isRecall(String(item.name))
      )
        this.#hidden.add(at)
      if (type === 'response.output_item.done' && isRecord(item)) this.#done.set(at, item)
      if (this.#hidden.has(at)) return { out: [] }
      if (!this.#indices.has(at)) this.#indices.set(at, this.#clientIndex++)
      event.output_index = this.#indices.get(at)
    }
    return { out: [this.#emit(event)] }
  }

  endRound(): RoundEnd {
    const completed = this.#completed
    const final = isRecord(completed?.response) ? completed.response : undefined
    const items =
      this.#done.size > 0
        ? [...this.#done.entries()].sort(([a], [b]) => a - b).map(([, item]) => item)
        : Array.isArray(final?.output)
          ? final.output.filter(isRecord)
          : []
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
    this.#hidden = new Set()
    this.#indices = new Map()
    this.#done = new Map()
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
        error: { code: own?.code ?? own?.type ?? kind, message: body.message },
      },
    })
  }
}
