import { contentText, isRecord, type ChatMessage, type ToolCall } from '../wire/chat.js'
import { isRecallCall, sendChat, type Turn } from './context.js'
import { recordHiddenExchange, upstreamAssistant } from './exchange.js'
import { answerRecalls } from './recall.js'
import type { Meter } from '../stats/index.js'
import { sumUsage } from './usage.js'

/** What goes back to the client: the upstream's status, headers and body. */
export interface Answer {
  readonly status: number
  readonly headers: Record<string, string | string[]>
  readonly body: string
}

/**
 * A non-streaming completion. Recall calls are answered here and the upstream is asked again,
 * up to max_rounds; the client gets the rest of the answer, and the whole exchange is recorded.
 */
export async function completeChat(turn: Turn, meter?: Meter): Promise<Answer> {
  let extra: ChatMessage[] = []
  const hidden: ChatMessage[] = []
  const texts: string[] = []
  let usage: unknown
  for (let round = 0; ; round++) {
    const response = await sendChat(turn, extra)
    const raw = await response.body.text()
    const answer = { status: response.status, headers: response.headers, body: raw }
    const parsed = response.status === 200 ? parseJson(raw) : undefined
    const json = isRecord(parsed) ? parsed : undefined
    if (meter && json) {
      // Read only: on the common path the client still gets `raw`, byte for byte.
      meter.usage = sumUsage(meter.usage, json.usage)
      meter.timings = sumUsage(meter.timings, json.timings)
    }
    const choice: unknown = Array.isArray(json?.choices) ? json.choices[0] : undefined
    const message = isRecord(choice) && isRecord(choice.message) ? choice.message : undefined
    if (!json || !isRecord(choice) || !message) return answer // not ours to read: as it came
    const calls = (Array.isArray(message.tool_calls) ? message.tool_calls : []) as ToolCall[]
    const recalls = calls.filter((call) => isRecallCall(turn, call))
    if (round === 0 && recalls.length === 0) return answer // the common case: untouched bytes
    usage = sumUsage(usage, json.usage)
    const text = contentText(message.content as never)
    texts.push(text)
    const upstreamMessage = upstreamAssistant((message.content as string | null) ?? null, calls)
    const visibleCalls = calls.filter((call) => !isRecallCall(turn, call))

    if (recalls.length > 0) {
      if (meter) meter.recalls += recalls.length
      const answers = await answerRecalls(recalls, turn.session.ensure(), turn.store, turn.rules)
      hidden.push(upstreamMessage, ...answers)
      turn.log.info('recall-answered', { calls: recalls.length, round: round + 1 })
      const lastRound = round + 1 >= (turn.recall?.maxRounds ?? 1)
      if (visibleCalls.length === 0 && !lastRound) {
        extra = [...extra, upstreamMessage, ...answers]
        continue
      }
    } else {
      hidden.push(upstreamMessage)
    }

    const visible = upstreamAssistant(texts.join('') || null, visibleCalls)
    await recordHiddenExchange(visible, hidden, turn.session, turn.store, turn.lastMessage)
    choice.message = { ...message, ...visible }
    if (visibleCalls.length === 0) delete (choice.message as Record<string, unknown>).tool_calls
    choice.finish_reason =
      visibleCalls.length > 0 ? 'tool_calls' : recalls.length > 0 ? 'stop' : choice.finish_reason
    if (usage !== undefined) json.usage = usage
    return { ...answer, body: JSON.stringify(json) }
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
