import { LembasError, openAIErrorBody } from '../errors.js'
import type { UpstreamResponse } from '../upstream/index.js'
import { isRecord, type ChatMessage, type ToolCall } from '../wire/chat.js'
import { decodeSse, encodeSseData, SSE_DONE } from '../wire/sse.js'
import { isRecallCall, sendChat, type Turn } from './context.js'
import { recordHiddenExchange, upstreamAssistant } from './exchange.js'
import { answerRecalls } from './recall.js'
import type { Meter } from '../stats/index.js'
import { sumUsage } from './usage.js'

type Chunk = Record<string, unknown>

interface CallState {
  id: string
  name: string
  arguments: string
  /** Decided once the name is known: a recall (kept back) or the client's (forwarded). */
  visibleIndex?: number
  recall?: boolean
  /** Deltas that came before the name did. */
  pending: Record<string, unknown>[]
}

/**
 * One upstream stream's worth of state. Text and the client's own tool calls flow through as
 * they arrive; recall calls are kept back, and so are the finish and usage chunks, until the
 * round's end shows whether the proxy asks the upstream again.
 */
class Round {
  readonly calls = new Map<number, CallState>()
  text = ''
  finish: { raw: string; chunk: Chunk } | undefined
  usage: { raw: string; chunk: Chunk; usage: unknown } | undefined
  /** llama.cpp's `timings`, on its final chunk. */
  timings: unknown
  nextVisible = 0

  constructor(
    private readonly turn: Turn,
    /** Rounds after the first carry the first round's chunk id, as one answer. */
    private readonly chunkId: string | undefined,
  ) {}

  /** The chunk to forward now (raw when untouched), or undefined to keep it back. */
  take(raw: string, chunk: Chunk): string | undefined {
    if (isRecord(chunk.timings)) this.timings = chunk.timings
    if (isRecord(chunk.usage)) {
      const choices = Array.isArray(chunk.choices) ? chunk.choices : []
      this.usage = { raw, chunk, usage: chunk.usage }
      if (choices.length === 0) return undefined
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
      // The last delta came with the finish: forward the delta now, the finish alone later.
      const finishOnly = structuredClone(chunk)
      ;(finishOnly.choices as Record<string, unknown>[])[0]!.delta = {}
      this.finish = { raw: JSON.stringify(finishOnly), chunk: finishOnly }
      choice.finish_reason = null
      changed = true
    }
    const delta = isRecord(choice.delta) ? choice.delta : undefined
    if (delta && typeof delta.content === 'string') this.text += delta.content
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
        if (!hasContent(delta)) return undefined
      }
    }
    return this.forward(raw, chunk, changed)
  }

  private toolCallDelta(part: unknown): Record<string, unknown>[] {
    if (!isRecord(part) || typeof part.index !== 'number') return []
    let state = this.calls.get(part.index)
    if (!state) {
      state = { id: '', name: '', arguments: '', pending: [] }
      this.calls.set(part.index, state)
    }
    if (typeof part.id === 'string') state.id = part.id
    const fn = isRecord(part.function) ? part.function : {}
    if (typeof fn.name === 'string') state.name += fn.name
    if (typeof fn.arguments === 'string') state.arguments += fn.arguments
    if (state.recall === undefined && state.name !== '') {
      state.recall = isRecallCall(this.turn, { function: { name: state.name, arguments: '' } })
      if (!state.recall) state.visibleIndex = this.nextVisible++
    }
    if (state.recall === undefined) {
      state.pending.push(part)
      return []
    }
    if (state.recall) return []
    const out = [...state.pending, part].map((p) => ({ ...p, index: state.visibleIndex }))
    state.pending = []
    return out
  }

  private forward(raw: string, chunk: Chunk, changed: boolean): string {
    if (this.chunkId === undefined && !changed) return raw
    if (this.chunkId !== undefined) chunk.id = this.chunkId
    return JSON.stringify(chunk)
  }

  /** Every call of the round in upstream order, as the upstream will see them again. */
  toolCalls(): ToolCall[] {
    return [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
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
      if (parts.length > 0)
        out.push(JSON.stringify(this.template({ delta: { tool_calls: parts } })))
    }
    return out
  }

  template(choice: Record<string, unknown>, extra: Record<string, unknown> = {}): Chunk {
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

function hasContent(delta: Record<string, unknown>): boolean {
  return Object.entries(delta).some(
    ([key, value]) => key !== 'role' && value !== null && value !== undefined && value !== '',
  )
}

/**
 * A streaming completion as SSE text, starting from the first upstream response (already
 * checked to be a 200). Ends with one [DONE]; an upstream failure mid-way becomes an error event.
 */
export async function* streamChat(
  turn: Turn,
  first: UpstreamResponse,
  meter?: Meter,
): AsyncGenerator<string> {
  let extra: ChatMessage[] = []
  let response = first
  const hidden: ChatMessage[] = []
  const texts: string[] = []
  let usage: unknown
  let chunkId: string | undefined
  let firstChunkId: string | undefined
  const includeUsage = turn.request.stream_options?.include_usage === true
  try {
    for (let round = 0; ; round++) {
      const state = new Round(turn, chunkId)
      for await (const event of decodeSse(response.body)) {
        if (event.data === SSE_DONE) break
        let chunk: unknown
        try {
          chunk = JSON.parse(event.data)
        } catch {
          throw new LembasError('upstream_bad_response', 'upstream sent an event that is not JSON')
        }
        if (!isRecord(chunk))
          throw new LembasError(
            'upstream_bad_response',
            'upstream sent an event that is not an object',
          )
        if (isRecord(chunk.error)) {
          if (meter) meter.failed = true
          yield encodeSseData(event.data) // the upstream's own error event, as it came
          return
        }
        firstChunkId ??= typeof chunk.id === 'string' ? chunk.id : undefined
        const out = state.take(event.data, chunk)
        if (out !== undefined) yield encodeSseData(out)
      }
      for (const out of state.flushUndecided()) yield encodeSseData(out)
      usage = sumUsage(usage, state.usage?.usage)
      if (meter) {
        meter.usage = sumUsage(meter.usage, state.usage?.usage)
        meter.timings = sumUsage(meter.timings, state.timings)
      }
      texts.push(state.text)
      const calls = state.toolCalls()
      const recalls = calls.filter((call) => isRecallCall(turn, call))
      const visibleCalls = calls.filter((call) => !isRecallCall(turn, call))
      const upstreamMessage = upstreamAssistant(state.text === '' ? null : state.text, calls)

      if (recalls.length === 0 && round === 0) {
        if (state.finish) yield encodeSseData(state.finish.raw)
        // Usage rides on its own chunk (OpenAI) or on the finish chunk (some local servers).
        if (state.usage && state.usage.raw !== state.finish?.raw)
          yield encodeSseData(state.usage.raw)
        yield encodeSseData(SSE_DONE)
        return
      }
      if (recalls.length > 0) {
        if (meter) meter.recalls += recalls.length
        const answers = await answerRecalls(recalls, turn.session.ensure(), turn.store, turn.rules)
        hidden.push(upstreamMessage, ...answers)
        turn.log.info('recall-answered', { calls: recalls.length, round: round + 1, stream: true })
        const lastRound = round + 1 >= (turn.recall?.maxRounds ?? 1)
        if (visibleCalls.length === 0 && !lastRound) {
          extra = [...extra, upstreamMessage, ...answers]
          chunkId = firstChunkId
          response = await sendChat(turn, extra)
          if (response.status !== 200) {
            const detail = (await response.body.text()).slice(0, 500)
            throw new LembasError(
              'upstream_bad_response',
              `upstream answered ${response.status} after a recall: ${detail}`,
            )
          }
          continue
        }
      } else {
        hidden.push(upstreamMessage)
      }
      const visible = upstreamAssistant(texts.join('') || null, visibleCalls)
      await recordHiddenExchange(visible, hidden, turn.session, turn.store, turn.lastMessage)
      const finishReason = visibleCalls.length > 0 ? 'tool_calls' : 'stop'
      yield encodeSseData(
        JSON.stringify(state.template({ delta: {}, finish_reason: finishReason })),
      )
      if (includeUsage && usage !== undefined) {
        yield encodeSseData(JSON.stringify({ ...state.template({}), choices: [], usage }))
      }
      yield encodeSseData(SSE_DONE)
      return
    }
  } catch (error) {
    if (turn.signal.aborted) return
    if (meter) meter.failed = true
    const mapped = error instanceof LembasError ? error : turn.upstream.mapError(error, turn.signal)
    const kind = mapped instanceof LembasError ? mapped.kind : 'upstream_bad_response'
    const message = mapped instanceof Error ? mapped.message : 'the upstream stream failed'
    turn.log.warn('stream-failed', { kind, message })
    yield encodeSseData(JSON.stringify(openAIErrorBody(kind, message)))
  }
}
