import type { Door, Json } from './door.js'
import type { Restored } from '../session/answers.js'
import { renderingId } from './elide.js'
import { contentText, type ChatMessage, type ToolCall } from '../wire/chat.js'

/**
 * `--elide` and the proxy's own recall answers. Their exchanges go upstream again on every later
 * request, put back where the client has the model's answer; without this, a result the model
 * recalled stayed whole for the rest of the session (sessions that recall often carried more of
 * it than of their own results). Each answer is stored under an id of its own, so it is an old
 * result like any other: a batch replaces it by its stand-in, and recall of its id shows it.
 */
export interface RecallAnswer {
  /** Its key in a batch's stand-ins: by its id (a session's ids are its own). */
  readonly key: string
  readonly id: string
  /** Its text as the upstream had it. */
  readonly text: string
  /** The client item its exchange stands at. */
  readonly at: number
}

/** A recall answer's key among a batch's stand-ins (tool result keys are base64url digests). */
export function answerKey(id: string): string {
  return 'recall:' + id
}

/** The recall answers of the exchanges put back, in order (every tool result there is one). */
export function recallAnswers(door: Door, exchanges: readonly Restored[]): RecallAnswer[] {
  return exchanges.flatMap(({ at, items }) =>
    answersOf(door, items).map(({ id, text }) => ({ key: answerKey(id), id, text, at })),
  )
}

/**
 * An exchange's items with the answers `texts` names replaced by their stand-ins, and the calls
 * `calls` names (`--elide-inputs`: the agent's own calls of the answer, elided in the client's
 * item that the exchange stands for) with their arguments as rewritten.
 */
export function elidedExchange(
  door: Door,
  items: readonly Json[],
  texts: ReadonlyMap<string, string>,
  calls: ReadonlyMap<string, string>,
): readonly Json[] {
  const view = door.toView(items)
  let changed = false
  const rendered = view.messages.map((message): ChatMessage => {
    if (message.role === 'assistant' && message.tool_calls && calls.size > 0) {
      const rewritten = message.tool_calls.map((call) => {
        const args = calls.get(callKey(call))
        return args === undefined
          ? call
          : { ...call, function: { ...call.function, arguments: args } }
      })
      if (rewritten.every((call, k) => call === message.tool_calls![k])) return message
      changed = true
      return { ...message, tool_calls: rewritten }
    }
    const id = message.role === 'tool' ? idOf(message) : undefined
    const standIn = id === undefined ? undefined : texts.get(answerKey(id))
    if (standIn === undefined) return message
    changed = true
    return { ...message, content: standIn }
  })
  return changed ? door.writeBack(items, view, rendered).flat() : items
}

/**
 * `--elide-inputs`: the calls the rebuild rewrote, by their id and arguments as the model wrote
 * them (the exchange holds the same call, as the upstream said it), to their arguments now.
 */
export function rewrittenCalls(
  view: readonly ChatMessage[],
  rendered: readonly ChatMessage[],
): Map<string, string> {
  const out = new Map<string, string>()
  view.forEach((message, i) => {
    const shown = rendered[i]!
    if (shown === message || message.role !== 'assistant') return
    message.tool_calls?.forEach((call, k) => {
      const args = shown.tool_calls?.[k]?.function.arguments
      if (args !== undefined && args !== call.function.arguments) out.set(callKey(call), args)
    })
  })
  return out
}

function callKey(call: ToolCall): string {
  return call.id + '\u0000' + call.function.arguments
}

function answersOf(door: Door, items: readonly Json[]): { id: string; text: string }[] {
  return door.toView(items).messages.flatMap((message) => {
    const id = message.role === 'tool' ? idOf(message) : undefined
    return id === undefined ? [] : [{ id, text: contentText(message.content) }]
  })
}

function idOf(message: ChatMessage): string | undefined {
  return renderingId(contentText(message.content))
}
