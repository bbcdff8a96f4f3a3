import type { ErrorKind } from '../../errors.js'
import { parseEvent } from '../event.js'
import { isRecord } from '../../wire/chat.js'
import { SSE_DONE, type SseEvent } from '../../wire/sse.js'
import type { DoorStream, Json, Part, RoundEnd, UpstreamError } from '../../pipeline/door.js'
import { anthropicErrorBody, anthropicErrorType, partOf } from './index.js'

interface BlockState {
  block: Json
  json: string
  recall: boolean
  /** The index the client sees. */
  out: number
}

/** One SSE event in Anthropic's grammar: its type as the event name. */
function sse(type: string, data: string): string {
  return `event: ${type}\ndata: ${data}\n\n`
}

/**
 * A Messages stream across recall rounds. Blocks flow through as they arrive, renumbered; a
 * recall's blocks are kept back, and so are the end events, until the round's end shows
 * whether the proxy asks the upstream again.
 */
export class MessagesStream implements DoorStream {
  #round = 0
  #nextIndex = 0
  #blocks = new Map<number, BlockState>()
  #messageDelta: Json | undefined
  #held: string[] = []
  #usage: unknown

  constructor(private readonly isRecall: (name: string) => boolean) {}

  take(event: SseEvent): { out: string[]; stop?: boolean } {
    // Some gateways end an Anthropic stream the OpenAI way too (Azure APIM, new-api's Zhipu).
    if (event.data.trim() === SSE_DONE) return { out: [] }
    const data = parseEvent(event.data)
    // The event's name says it is an error even where its data does not (llama.cpp's own body).
    const type =
      event.event === 'error'
        ? 'error'
        : typeof data.type === 'string'
          ? data.type
          : (event.event ?? '')
    const index = typeof data.index === 'number' ? data.index : -1
    if (type === 'error') return { out: [errorEvent(event.data, data)], stop: true }
    if (type === 'message_start') {
      const message = isRecord(data.message) ? data.message : {}
      if (isRecord(message.usage)) this.#usage = message.usage
      return { out: this.#round === 0 ? [sse(type, event.data)] : [] }
    }
    if (type === 'content_block_start') {
      const block = isRecord(data.content_block) ? structuredClone(data.content_block) : {}
      const recall = block.type === 'tool_use' && this.isRecall(String(block.name ?? ''))
      const state: BlockState = { block, json: '', recall, out: recall ? -1 : this.#nextIndex++ }
      this.#blocks.set(index, state)
      return { out: recall ? [] : [renumbered(type, event.data, data, state.out)] }
    }
    if (type === 'content_block_delta' || type === 'content_block_stop') {
      const state = this.#blocks.get(index)
      if (state && type === 'content_block_delta') accumulate(state, data.delta)
      if (!state) return { out: [sse(type, event.data)] }
      return { out: state.recall ? [] : [renumbered(type, event.data, data, state.out)] }
    }
    if (type === 'message_delta') {
      this.#messageDelta = data
      // The delta's counts are cumulative: they stand over the start's where both have one.
      if (isRecord(data.usage))
        this.#usage = { ...(isRecord(this.#usage) ? this.#usage : {}), ...data.usage }
      this.#held.push(sse(type, event.data))
      return { out: [] }
    }
    if (type === 'message_stop') {
      this.#held.push(sse(type, event.data))
      return { out: [] }
    }
    return { out: [sse(type, event.data)] } // ping, and whatever comes later
  }

  endRound(): RoundEnd {
    const parts = [...this.#blocks.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, state]) => partOf(finished(state)))
    const complete = this.#held.some((event) => event.startsWith('event: message_stop\n'))
    const end: RoundEnd = { parts, usage: this.#usage, held: this.#held, complete }
    this.#round++
    this.#blocks = new Map()
    this.#held = []
    this.#usage = undefined
    return end
  }

  close(visible: readonly Part[], usage: unknown): string[] {
    const delta = isRecord(this.#messageDelta?.delta) ? this.#messageDelta.delta : {}
    // The last round's own reason stands (`max_tokens`: the answer was cut), unless it was the
    // recall calls the client never sees.
    const own = typeof delta.stop_reason === 'string' ? delta.stop_reason : undefined
    const stopReason = visible.some((part) => part.call)
      ? 'tool_use'
      : own !== undefined && own !== 'tool_use'
        ? own
        : 'end_turn'
    const final: Json = { type: 'message_delta', delta: { ...delta, stop_reason: stopReason } }
    if (usage !== undefined) final.usage = usage
    return [
      sse('message_delta', JSON.stringify(final)),
      sse('message_stop', JSON.stringify({ type: 'message_stop' })),
    ]
  }

  say(text: string): string[] {
    const index = this.#nextIndex++
    const events: Json[] = [
      { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index, delta: { type: 'text_delta', text } },
      { type: 'content_block_stop', index },
    ]
    return events.map((event) => sse(String(event.type), JSON.stringify(event)))
  }

  error(kind: ErrorKind, message: string, own?: UpstreamError): string {
    const type = anthropicErrorType(own?.type, own?.status)
    return sse('error', JSON.stringify(anthropicErrorBody(kind, message, type)))
  }
}

/** An upstream's error event in Anthropic's shape: as it came when it is, else its message. */
function errorEvent(raw: string, data: Json): string {
  if (data.type === 'error' && isRecord(data.error)) return sse('error', raw)
  const inner = isRecord(data.error) ? data.error : data
  const message =
    typeof inner.message === 'string' ? inner.message : 'the upstream reported an error'
  const status = typeof inner.code === 'number' ? inner.code : undefined
  const type =
    anthropicErrorType(typeof inner.type === 'string' ? inner.type : undefined, status) ??
    'api_error'
  return sse('error', JSON.stringify({ type: 'error', error: { type, message } }))
}

/** The event with the block index the client sees (its bytes as they came when unchanged). */
function renumbered(type: string, raw: string, data: Json, out: number): string {
  if (data.index === out) return sse(type, raw)
  return sse(type, JSON.stringify({ ...data, index: out }))
}

function accumulate(state: BlockState, delta: unknown): void {
  if (!isRecord(delta)) return
  const block = state.block
  if (delta.type === 'text_delta' && typeof delta.text === 'string')
    block.text = String(block.text ?? '') + delta.text
  else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string')
    state.json += delta.partial_json
  else if (delta.type === 'thinking_delta' && typeof delta.thinking === 'string')
    block.thinking = String(block.thinking ?? '') + delta.thinking
  else if (delta.type === 'signature_delta' && typeof delta.signature === 'string')
    block.signature = delta.signature
}

/** A block as the upstream will see it again: its input parsed from the streamed JSON. */
function finished(state: BlockState): Json {
  if (state.json === '') return state.block
  let input: unknown
  try {
    input = JSON.parse(state.json)
  } catch {
    input = {}
  }
  return { ...state.block, input }
}
