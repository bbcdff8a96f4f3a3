import { ERROR_KINDS, LembasError, type ErrorKind } from '../../errors.js'
import type { PipelineDeps } from '../../pipeline/handle.js'
import type { SessionRef } from '../../pipeline/history.js'
import { answerRecalls, type RecallSetup } from '../../pipeline/recall.js'
import { keys } from '../../pipeline/records.js'
import { sumUsage } from '../../pipeline/usage.js'
import type { UpstreamResponse } from '../../upstream/index.js'
import { isRecord, type ChatMessage, type ToolCall } from '../../wire/chat.js'
import { decodeSse } from '../../wire/sse.js'
import { assistantChat, visibleKey, type Json } from './messages.js'

/** Everything one Messages request's upstream exchange needs. */
export interface MessagesTurn {
  /** The upstream body's fields; recall rounds append to its messages. */
  readonly fields: Json
  readonly headers: Record<string, string>
  readonly signal: AbortSignal
  readonly session: SessionRef
  /** The request's last message: a text reply's key is tied to it. */
  readonly last: ChatMessage | undefined
  /** Null when the client defines its own `recall`: nothing is intercepted. */
  readonly recall: RecallSetup | null
  readonly deps: PipelineDeps
}

/** Anthropic's error body for an error kind. */
export function anthropicErrorBody(kind: ErrorKind, message: string) {
  const type =
    ERROR_KINDS[kind].type === 'invalid_request_error' ? 'invalid_request_error' : 'api_error'
  return { type: 'error', error: { type, message } }
}

/** The upstream request of a turn, with the messages of earlier recall rounds appended. */
export function requestOf(turn: MessagesTurn, extra: readonly Json[]) {
  const messages = turn.fields.messages as Json[]
  return {
    method: 'POST',
    path: '/messages',
    headers: turn.headers,
    body: Buffer.from(
      JSON.stringify(
        extra.length === 0 ? turn.fields : { ...turn.fields, messages: [...messages, ...extra] },
      ),
    ),
    signal: turn.signal,
  }
}

/** The store key of an assistant message's hidden recall exchange, in Anthropic's shape. */
export function hiddenKey(assistant: string): string {
  return 'ah:' + assistant
}

/** Records what a visible assistant message stands for, before the client sees it. */
async function recordHidden(
  turn: MessagesTurn,
  visible: readonly Json[],
  upstreamMessages: readonly Json[],
): Promise<void> {
  const key = visibleKey(assistantChat(visible), turn.last)
  const scope = turn.session.ensure()
  const { store } = turn.deps
  await store.putIfAbsent(scope, [[hiddenKey(key), JSON.stringify(upstreamMessages)]])
  // A text reply is too common to name a session by: only tool_use ids do that.
  if (!turn.session.identity.explicit && assistantChat(visible).tool_calls)
    await store.putIfAbsent(turn.session.identity.tenant, [[keys.ownerOfAssistant(key), scope]])
}

function isRecallBlock(turn: MessagesTurn, block: Json): boolean {
  return turn.recall !== null && block.type === 'tool_use' && block.name === turn.recall.name
}

/** The recall blocks answered, as the user message that goes upstream next. */
async function answered(turn: MessagesTurn, recalls: readonly Json[]): Promise<Json> {
  const calls: ToolCall[] = recalls.map((block) => ({
    id: String(block.id ?? ''),
    type: 'function',
    function: { name: String(block.name ?? ''), arguments: JSON.stringify(block.input ?? {}) },
  }))
  const answers = await answerRecalls(
    calls,
    turn.session.ensure(),
    turn.deps.store,
    turn.deps.rules,
  )
  return {
    role: 'user',
    content: answers.map((answer) => ({
      type: 'tool_result',
      tool_use_id: answer.tool_call_id,
      content: answer.content,
    })),
  }
}

export interface Answer {
  readonly status: number
  readonly headers: Record<string, string | string[]>
  readonly body: string
}

/**
 * A non-streaming message. Recall calls are answered here and the upstream is asked again, up
 * to max_rounds; the client gets the rest of the answer, and the whole exchange is recorded.
 */
export async function completeMessages(turn: MessagesTurn): Promise<Answer> {
  const extra: Json[] = []
  const hidden: Json[] = []
  const visible: Json[] = []
  let usage: unknown
  for (let round = 0; ; round++) {
    const response = await turn.deps.upstream.send(requestOf(turn, extra))
    const raw = await response.body.text()
    const answer = { status: response.status, headers: response.headers, body: raw }
    const json = response.status === 200 ? parseObject(raw) : undefined
    if (!json || !Array.isArray(json.content)) return answer // not ours to read: as it came
    const content = json.content.filter(isRecord)
    const recalls = content.filter((block) => isRecallBlock(turn, block))
    if (round === 0 && recalls.length === 0) return answer // the common case: untouched bytes
    usage = sumUsage(usage, json.usage)
    const shown = content.filter((block) => !isRecallBlock(turn, block))
    visible.push(...shown)
    const upstreamMessage: Json = { role: 'assistant', content }
    if (recalls.length > 0) {
      const reply = await answered(turn, recalls)
      hidden.push(upstreamMessage, reply)
      turn.deps.log.info('recall-answered', { calls: recalls.length, round: round + 1 })
      const lastRound = round + 1 >= (turn.recall?.maxRounds ?? 1)
      if (!shown.some((block) => block.type === 'tool_use') && !lastRound) {
        extra.push(upstreamMessage, reply)
        continue
      }
    } else hidden.push(upstreamMessage)
    await recordHidden(turn, visible, hidden)
    const toolUse = visible.some((block) => block.type === 'tool_use')
    json.content = visible
    json.stop_reason = toolUse ? 'tool_use' : recalls.length > 0 ? 'end_turn' : json.stop_reason
    if (usage !== undefined) json.usage = usage
    return { ...answer, body: JSON.stringify(json) }
  }
}

function parseObject(text: string): Json | undefined {
  try {
    const value: unknown = JSON.parse(text)
    return isRecord(value) ? value : undefined
  } catch {
    return undefined
  }
}

/** One SSE event in Anthropic's grammar: its type as the event name. */
function sse(type: string, data: string): string {
  return `event: ${type}\ndata: ${data}\n\n`
}

interface BlockState {
  block: Json
  json: string
  recall: boolean
  /** The index the client sees. */
  out: number
}

/**
 * A streaming message as SSE text, from the first upstream response (a 200). Blocks flow
 * through as they arrive, renumbered; a recall's blocks are kept back, and so are the end
 * events, until the round's end shows whether the proxy asks the upstream again.
 */
export async function* streamMessages(
  turn: MessagesTurn,
  first: UpstreamResponse,
): AsyncGenerator<string> {
  let response = first
  const extra: Json[] = []
  const hidden: Json[] = []
  const visible: Json[] = []
  let usage: unknown
  let nextIndex = 0
  try {
    for (let round = 0; ; round++) {
      const blocks = new Map<number, BlockState>()
      let messageDelta: Json | undefined
      const held: string[] = []
      for await (const event of decodeSse(response.body)) {
        const data = parseObject(event.data)
        if (!data)
          throw new LembasError('upstream_bad_response', 'upstream sent an event that is not JSON')
        const type = typeof data.type === 'string' ? data.type : (event.event ?? '')
        const index = typeof data.index === 'number' ? data.index : -1
        if (type === 'error') {
          yield sse('error', event.data) // the upstream's own error event, as it came
          return
        }
        if (type === 'message_start') {
          if (round === 0) yield sse(type, event.data)
        } else if (type === 'content_block_start') {
          const block = isRecord(data.content_block) ? structuredClone(data.content_block) : {}
          const recall = isRecallBlock(turn, block)
          const state: BlockState = { block, json: '', recall, out: recall ? -1 : nextIndex++ }
          blocks.set(index, state)
          if (!recall) yield renumbered(type, event.data, data, state.out)
        } else if (type === 'content_block_delta' || type === 'content_block_stop') {
          const state = blocks.get(index)
          if (state && type === 'content_block_delta') accumulate(state, data.delta)
          if (!state) yield sse(type, event.data)
          else if (!state.recall) yield renumbered(type, event.data, data, state.out)
        } else if (type === 'message_delta') {
          messageDelta = data
          usage = sumUsage(usage, data.usage)
          held.push(sse(type, event.data))
        } else if (type === 'message_stop') {
          held.push(sse(type, event.data))
        } else yield sse(type, event.data) // ping, and whatever comes later
      }
      const content = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, s]) => finished(s))
      const recalls = content.filter((block) => isRecallBlock(turn, block))
      const shown = content.filter((block) => !isRecallBlock(turn, block))
      if (round === 0 && recalls.length === 0) {
        yield* held
        return
      }
      visible.push(...shown)
      const upstreamMessage: Json = { role: 'assistant', content }
      if (recalls.length > 0) {
        const reply = await answered(turn, recalls)
        hidden.push(upstreamMessage, reply)
        turn.deps.log.info('recall-answered', {
          calls: recalls.length,
          round: round + 1,
          stream: true,
        })
        const lastRound = round + 1 >= (turn.recall?.maxRounds ?? 1)
        if (!shown.some((block) => block.type === 'tool_use') && !lastRound) {
          extra.push(upstreamMessage, reply)
          response = await turn.deps.upstream.send(requestOf(turn, extra))
          if (response.status !== 200) {
            const detail = (await response.body.text()).slice(0, 500)
            throw new LembasError(
              'upstream_bad_response',
              `upstream answered ${response.status} after a recall: ${detail}`,
            )
          }
          continue
        }
      } else hidden.push(upstreamMessage)
      await recordHidden(turn, visible, hidden)
      const toolUse = visible.some((block) => block.type === 'tool_use')
      const delta = isRecord(messageDelta?.delta) ? messageDelta.delta : {}
      const stopReason = toolUse ? 'tool_use' : 'end_turn'
      const final: Json = { type: 'message_delta', delta: { ...delta, stop_reason: stopReason } }
      if (usage !== undefined) final.usage = usage
      yield sse('message_delta', JSON.stringify(final))
      yield sse('message_stop', JSON.stringify({ type: 'message_stop' }))
      return
    }
  } catch (error) {
    if (turn.signal.aborted) return
    const mapped =
      error instanceof LembasError ? error : turn.deps.upstream.mapError(error, turn.signal)
    const kind = mapped instanceof LembasError ? mapped.kind : 'upstream_bad_response'
    const message = mapped instanceof Error ? mapped.message : 'the upstream stream failed'
    turn.deps.log.warn('stream-failed', { kind, message, format: 'anthropic' })
    yield sse('error', JSON.stringify(anthropicErrorBody(kind, message)))
  }
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
