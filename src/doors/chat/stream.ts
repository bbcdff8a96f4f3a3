import { openAIErrorBody, type ErrorKind } from '../../errors.js'
import { parseEvent } from '../event.js'
import { isRecord, type ToolCall } from '../../wire/chat.js'
import { encodeSseData, SSE_DONE, type SseEvent } from '../../wire/sse.js'
import type { DoorStream, Json, Part, RoundEnd, UpstreamError } from '../../pipeline/door.js'
import { assistantMessage } from './index.js'
import { Reasoning } from './reasoning.js'

interface CallState {
  /** The upstream's index for it. */
  readonly at: number
  id: string
  name: string
  arguments: string
  /** Decided once the name is known: a recall (kept back) or the client's (forwarded). */
  visibleIndex?: number
  recall?: boolean
  /** Deltas that came before the name did. */
  pending: Json[]
  /** A call's other fields (Gemini's `extra_content` with its thought signature), sent back. */
  extra: Json
}

/**
 * A chat completion stream across recall rounds. Text and the client's own tool calls flow
 * through as they arrive; recall calls are kept back, and so are the finish and usage chunks,
 * until the round's end shows whether the proxy asks the upstream again.
 */
export class ChatStream implements DoorStream {
  #round: ChatRound
  #firstChunkId: string | undefined
  #last: ChatRound | undefined
  readonly #includeUsage: boolean

  constructor(
    request: Json,
    private readonly isRecall: (name: string) => boolean,
  ) {
    const options = request.stream_options
    this.#includeUsage = isRecord(options) && options.include_usage === true
    this.#round = new ChatRound(isRecall, undefined)
  }

  take(event: SseEvent): { out: string[]; stop?: boolean } {
    if (this.#round.done) return { out: [] }
    if (event.data === SSE_DONE) {
      this.#round.done = true
      return { out: [] }
    }
    const chunk = parseEvent(event.data)
    if (isRecord(chunk.error)) return { out: [encodeSseData(event.data)], stop: true }
    this.#firstChunkId ??= typeof chunk.id === 'string' ? chunk.id : undefined
    const out = this.#round.take(event.data, chunk)
    return { out: out === undefined ? [] : [encodeSseData(out)] }
  }

  endRound(): RoundEnd {
    const round = this.#round
    this.#last = round
    this.#round = new ChatRound(this.isRecall, this.#firstChunkId)
    const held: string[] = []
    if (round.finish) held.push(encodeSseData(round.finish.raw))
    // Usage rides on its own chunk (OpenAI) or on the finish chunk (some local servers).
    if (round.usage?.raw !== undefined) held.push(encodeSseData(round.usage.raw))
    held.push(encodeSseData(SSE_DONE))
    const parts: Part[] = [
      ...round.reasoning.part(),
      ...(round.text === '' ? [] : [{ raw: { text: round.text } }]),
      ...round.toolCalls().map((call) => ({ raw: call as Json, call })),
    ]
    return {
      parts,
      usage: round.usage?.usage,
      timings: round.timings,
      held,
      out: round.flushUndecided().map(encodeSseData),
      complete: round.done || round.finish !== undefined,
    }
  }

  close(visible: readonly Part[], usage: unknown): string[] {
    const last = this.#last!
    const calls = assistantMessage(visible).tool_calls
    const finishReason = calls ? 'tool_calls' : 'stop'
    const out = [
      encodeSseData(JSON.stringify(last.template({ delta: {}, finish_reason: finishReason }))),
    ]
    if (this.#includeUsage && usage !== undefined)
      out.push(encodeSseData(JSON.stringify({ ...last.template({}), choices: [], usage })))
    out.push(encodeSseData(SSE_DONE))
    return out
  }

  say(text: string): string[] {
    return [encodeSseData(JSON.stringify(this.#last!.template({ delta: { content: text } })))]
  }

  error(kind: ErrorKind, message: string, own?: UpstreamError): string {
    const { error } = openAIErrorBody(kind, message)
    return encodeSseData(
      JSON.stringify({
        error: { ...error, type: own?.type ?? error.type, code: own?.code ?? kind },
      }),
    )
  }
}

/** One upstream stream's worth of state. */
class ChatRound {
  /** The round's calls, in the order they began. */
  readonly calls = new Map<number, CallState>()
  /** The call each upstream index stands for now (a server may give a later call an index again). */
  readonly #slots = new Map<number, number>()
  /** The `role` of a chunk kept back whole (a recall call first): the next one forwarded says it. */
  #role: unknown
  readonly reasoning = new Reasoning(true)
  text = ''
  done = false
  finish: { raw: string; chunk: Json } | undefined
  /** The round's usage; `raw`, the chunk that carried it alone, kept back to be sent at the end. */
  usage: { raw?: string; usage: unknown } | undefined
  /** llama.cpp's `timings`, on its final chunk. */
  timings: unknown
  nextVisible = 0

  constructor(
    private readonly isRecall: (name: string) => boolean,
    /** Rounds after the first carry the first round's chunk id, as one answer. */
    private readonly chunkId: string | undefined,
  ) {}

  /** The chunk to forward now (raw when untouched), or undefined to keep it back. */
  take(raw: string, chunk: Json): string | undefined {
    if (isRecord(chunk.timings)) this.timings = chunk.timings
    if (isRecord(chunk.usage)) {
      const choices = Array.isArray(chunk.choices) ? chunk.choices : []
      if (choices.length === 0) {
        this.usage = { raw, usage: chunk.usage }
        return undefined
      }
      // On a chunk of the answer (Mistral's and Gemini's last, a server's every chunk): it goes
      // out with that chunk, or with its finish, and is never sent again on its own.
      this.usage = { usage: chunk.usage }
    }
    const choice: unknown = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined
    if (!isRecord(choice)) return this.forward(raw, chunk, false)
    let changed = false
    if (choice.finish_reason !== undefined && choice.finish_reason !== null) {
      const delta = isRecord(choice.delta) ? choice.delta : {}
      if (!hasContent(delta)) {
        this.finish = { raw, chunk: structuredClone(chunk) }
        return undefined
      }
      // The last delta came with the finish: forward the delta now, the finish (and the usage
      // that came with it) alone later.
      const finishOnly = structuredClone(chunk)
      ;(finishOnly.choices as Json[])[0]!.delta = {}
      this.finish = { raw: JSON.stringify(finishOnly), chunk: finishOnly }
      choice.finish_reason = null
      delete chunk.usage
      changed = true
    }
    const delta = isRecord(choice.delta) ? choice.delta : undefined
    if (delta && typeof delta.content === 'string') this.text += delta.content
    if (delta) this.reasoning.take(delta)
    if (delta && Array.isArray(delta.tool_calls)) {
      // Some servers leave out `index` when a chunk holds one call: its position stands for it.
      const forwarded = delta.tool_calls.flatMap((part: unknown, position: number) =>
        this.toolCallDelta(
          isRecord(part) && typeof part.index !== 'number' ? { ...part, index: position } : part,
        ),
      )
      changed = true
      if (forwarded.length > 0) delta.tool_calls = forwarded
      else {
        delete delta.tool_calls
        if (!hasContent(delta)) {
          if (delta.role !== undefined) this.#role ??= delta.role
          return undefined
        }
      }
    }
    if (this.#role !== undefined && delta) {
      choice.delta = this.#withRole(delta)
      changed = true
    }
    return this.forward(raw, chunk, changed)
  }

  private toolCallDelta(part: unknown): Json[] {
    if (!isRecord(part) || typeof part.index !== 'number') return []
    // An empty id on a later delta (some vLLM builds) names nothing: the call keeps its own.
    const id = typeof part.id === 'string' && part.id !== '' ? part.id : undefined
    let slot = this.#slots.get(part.index)
    let state = slot === undefined ? undefined : this.calls.get(slot)
    // Another id at an index already taken, with a name, is another call: Ollama 0.20 gives
    // every call index 0, SGLang 0.4 its second one too; joined, a recall and the agent's call
    // became one. Without a name it is a later piece of the same call (Mistral sends the id
    // "null" on those).
    const fn = isRecord(part.function) ? part.function : {}
    const named = typeof fn.name === 'string' && fn.name !== ''
    if (!state || (named && id !== undefined && state.id !== '' && id !== state.id)) {
      slot = this.calls.size
      state = { at: part.index, id: '', name: '', arguments: '', pending: [], extra: {} }
      this.calls.set(slot, state)
      this.#slots.set(part.index, slot)
    }
    // A call keeps the id it began with.
    if (id !== undefined && state.id === '') state.id = id
    for (const [key, value] of Object.entries(part))
      if (!CALL_FIELDS.has(key)) state.extra[key] = value
    let sent: Json = part
    // A name sent whole again on every delta (llama.cpp before May 2025) is not a longer one,
    // and the client gets it once.
    if (named && fn.name === state.name) {
      const { name: _again, ...rest } = fn
      sent = { ...part, function: rest }
    } else if (typeof fn.name === 'string') state.name += fn.name
    if (typeof fn.arguments === 'string') state.arguments += fn.arguments
    if (state.recall === undefined && state.name !== '') {
      state.recall = this.isRecall(state.name)
      if (!state.recall) state.visibleIndex = this.nextVisible++
    }
    if (state.recall === undefined) {
      state.pending.push(sent)
      return []
    }
    if (state.recall) return []
    const visibleIndex = state.visibleIndex
    const out = [...state.pending, sent].map((p) => ({ ...p, index: visibleIndex }))
    state.pending = []
    return out
  }

  /** The delta with the role a chunk kept back said, unless it says one itself; said once. */
  #withRole(delta: Json): Json {
    const role = this.#role
    this.#role = undefined
    return role === undefined || delta.role !== undefined ? delta : { role, ...delta }
  }

  private forward(raw: string, chunk: Json, changed: boolean): string {
    if (this.chunkId === undefined && !changed) return raw
    if (this.chunkId !== undefined) chunk.id = this.chunkId
    return JSON.stringify(chunk)
  }

  /** Every call of the round in upstream order, as the upstream will see them again. */
  toolCalls(): ToolCall[] {
    // By the upstream's index; calls it gave the same index in the order they came.
    return [...this.calls.values()]
      .sort((a, b) => a.at - b.at)
      .map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
        ...call.extra,
      }))
  }

  /** Calls whose name never came are the client's: they go out at the end. */
  flushUndecided(): string[] {
    const out: string[] = []
    for (const state of this.calls.values()) {
      if (state.recall !== undefined) continue
      state.recall = false
      state.visibleIndex = this.nextVisible++
      const parts = state.pending.map((p) => ({ ...p, index: state.visibleIndex }))
      if (parts.length === 0) continue
      out.push(JSON.stringify(this.template({ delta: this.#withRole({ tool_calls: parts }) })))
    }
    return out
  }

  template(choice: Json, extra: Json = {}): Json {
    const base = this.finish?.chunk ?? {}
    return {
      id: this.chunkId ?? base.id,
      object: base.object ?? 'chat.completion.chunk',
      created: base.created,
      model: base.model,
      choices: [{ index: 0, ...choice }],
      ...extra,
    }
  }
}

/** A streamed call's fields the round assembles itself. */
const CALL_FIELDS = new Set(['index', 'id', 'type', 'function'])

function hasContent(delta: Json): boolean {
  return Object.entries(delta).some(
    ([key, value]) => key !== 'role' && value !== null && value !== undefined && value !== '',
  )
}
