import type { Door, Json } from './door.js'
import type { Restored } from '../session/answers.js'
import { contentText, type ChatMessage } from '../wire/chat.js'

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

/** An answer's id, at the start of its bracket. */
const ID = /^\[(#[0-9a-f]+)/

/** The recall answers of the exchanges put back, in order (every tool result there is one). */
export function recallAnswers(door: Door, exchanges: readonly Restored[]): RecallAnswer[] {
  return exchanges.flatMap(({ at, items }) =>
    answersOf(door, items).map(({ id, text }) => ({ key: answerKey(id), id, text, at })),
  )
}

/** An exchange's items with the answers `texts` names replaced by their stand-ins. */
export function elidedExchange(
  door: Door,
  items: readonly Json[],
  texts: ReadonlyMap<string, string>,
): readonly Json[] {
  const view = door.toView(items)
  let changed = false
  const rendered = view.messages.map((message): ChatMessage => {
    const id = message.role === 'tool' ? idOf(message) : undefined
    const standIn = id === undefined ? undefined : texts.get(answerKey(id))
    if (standIn === undefined) return message
    changed = true
    return { ...message, content: standIn }
  })
  return changed ? door.writeBack(items, view, rendered).flat() : items
}

function answersOf(door: Door, items: readonly Json[]): { id: string; text: string }[] {
  return door.toView(items).messages.flatMap((message) => {
    const id = message.role === 'tool' ? idOf(message) : undefined
    return id === undefined ? [] : [{ id, text: contentText(message.content) }]
  })
}

function idOf(message: ChatMessage): string | undefined {
  return ID.exec(contentText(message.content))?.[1]
}
