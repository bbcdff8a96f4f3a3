import type { Store } from '../store/store.js'
import type { SessionRef } from './find.js'
import { shortHash } from './identity.js'
import { keys, type HiddenRecord } from './records.js'

type Json = Record<string, unknown>

/** How a wire format's items are known again when the client sends them back (see Door). */
export interface AnswerShape {
  /**
   * How an item that may be a model's answer is known when the client sends it back (its text
   * and call ids, never re-serialised arguments), and whether its call ids name a session.
   * Undefined: the item is not an answer (a user message, a tool result).
   */
  answerDigest(item: Json): { readonly text: string; readonly named: boolean } | undefined
  /** Any item's text, for the item before an answer. */
  itemDigest(item: Json): string
  /**
   * Another digest an item may come back as, or was recorded under (Responses: by its id, as a
   * client that stores its output refers to it, and as reasoning was known before this release),
   * or undefined.
   */
  alias?(item: Json): string | undefined
  /** Restored items followed by the client's item: one item when the API wants them joined. */
  join?(restored: Json, next: Json): Json | undefined
}

/**
 * Where an answer stands: the number of items before it in the client's history and the item
 * just before it. Two answers that look alike (the same "Seen." after the same "show") at other
 * places are other answers: their hidden exchanges never mix.
 */
export interface AnswerPlace {
  readonly index: number
  readonly previous: string
}

/** An item of the request that may be a model's answer, and its key by place. */
export interface Placed {
  /** Index in the items being shaped. */
  readonly at: number
  readonly key: string
  /**
   * Its key by its alias digest, where that differs (Responses: a reasoning item by its id, as
   * exchanges were recorded before reasoning was known by its encrypted content).
   */
  readonly aliasKey?: string
  /** Its call ids can name a session (a text reply is too common to). */
  readonly named: boolean
}

/** The store keys of the placed answers' exchanges: each by its key, then those by an alias. */
export function hiddenKeys(placed: readonly Placed[]): string[] {
  return [
    ...placed.map((p) => keys.hidden(p.key)),
    ...placed.flatMap((p) => (p.aliasKey === undefined ? [] : [keys.hidden(p.aliasKey)])),
  ]
}

/** Each placed answer's exchange from the values read for hiddenKeys (by its key, else alias). */
export function hiddenValues(
  placed: readonly Placed[],
  values: readonly (string | undefined)[],
): (string | undefined)[] {
  let alias = placed.length
  return placed.map((p, i) => {
    const byAlias = p.aliasKey === undefined ? undefined : values[alias++]
    return values[i] ?? byAlias
  })
}

export function placeKey(place: AnswerPlace, text: string): string {
  return shortHash(`${place.index}\u0000${place.previous}\u0000${text}`)
}

/** How an item is matched when it comes back: an answer by its text and calls, else its digest. */
function matchDigest(door: AnswerShape, item: Json): string {
  return door.answerDigest(item)?.text ?? door.itemDigest(item)
}

/**
 * The items that may be answers, keyed by place. `base` items and the digest of the last of
 * them come before `items` (the fast path goes on from there).
 */
export function placeAnswers(
  door: AnswerShape,
  items: readonly Json[],
  base: number,
  previous: string,
): { placed: Placed[]; last: string } {
  const placed: Placed[] = []
  let before = previous
  items.forEach((item, at) => {
    const digest = door.answerDigest(item)
    const place = { index: base + at, previous: before }
    const alias = digest && door.alias?.(item)
    if (digest)
      placed.push({
        at,
        key: placeKey(place, digest.text),
        ...(alias && alias !== digest.text ? { aliasKey: placeKey(place, alias) } : {}),
        named: digest.named,
      })
    before = door.itemDigest(item)
  })
  return { placed, last: before }
}

/** An exchange put back: the client item it stands at, and its items as the upstream had them. */
export interface Restored {
  readonly at: number
  readonly items: readonly Json[]
}

/**
 * Puts back, in place of each answer the client got from a recall exchange, what the upstream
 * had there. `found` are the hidden records of `placed`, in order. `shown` gives an exchange's
 * items as they go now (`--elide`: its recall answers elided). Restored items that the API
 * wants joined with the client's next item (Messages: one user turn) are joined.
 */
export function restoreAnswers(
  door: AnswerShape,
  client: readonly Json[],
  written: readonly (Json | readonly Json[])[],
  placed: readonly Placed[],
  found: readonly (string | undefined)[],
  shown: (items: readonly Json[]) => readonly Json[] = (items) => items,
): { items: Json[][]; exchanges: Restored[] } {
  const records = new Map<number, HiddenRecord>()
  placed.forEach((place, i) => {
    const value = found[i]
    if (value !== undefined) records.set(place.at, JSON.parse(value) as HiddenRecord)
  })
  // Per client item, what goes upstream for it (empty when joined into the one before).
  const out: Json[][] = written.map((item) => (Array.isArray(item) ? [...item] : [item as Json]))
  const exchanges: Restored[] = []
  for (let i = 0; i < client.length; i++) {
    const record = records.get(i)
    const visible = record?.visible ?? []
    const matches = (d: string, k: number) => {
      const item = client[i + k]
      if (item === undefined) return false
      const sent = matchDigest(door, item)
      return sent === d || sent === record?.aliases?.[k] || door.alias?.(item) === d
    }
    if (!record || !visible.every(matches)) continue
    out[i] = [...shown(record.items)]
    for (let k = 1; k < visible.length; k++) out[i + k] = []
    exchanges.push({ at: i, items: record.items })
    i += visible.length - 1
    const following = out[i + 1]
    const next = following?.length === 1 ? following[0] : undefined
    const last = out[i - visible.length + 1]!.at(-1)
    const joined = next && last && door.join?.(last, next)
    if (joined) {
      out[i - visible.length + 1]!.splice(-1, 1, joined)
      out[i + 1] = []
    }
  }
  return { items: out, exchanges }
}

/**
 * Records what the upstream had where the client gets `visible`, before the client sees it,
 * so the next request puts it back byte for byte; an answer with calls names the session.
 */
export async function recordAnswer(
  door: AnswerShape,
  place: AnswerPlace,
  visible: readonly Json[],
  upstream: readonly Json[],
  session: SessionRef,
  store: Store,
): Promise<void> {
  const head = visible[0]
  const digest = head && door.answerDigest(head)
  if (!digest) return
  const key = placeKey(place, digest.text)
  const scope = session.ensure()
  const aliases = visible.map((item) => door.alias?.(item) ?? null)
  const record: HiddenRecord = {
    visible: visible.map((item) => matchDigest(door, item)),
    ...(aliases.some((alias) => alias !== null) ? { aliases } : {}),
    items: upstream,
  }
  await store.putIfAbsent(scope, [[keys.hidden(key), JSON.stringify(record)]])
  if (!session.identity.explicit && digest.named)
    await store.putIfAbsent(session.identity.tenant, [[keys.ownerOfAnswer(key), scope]])
}
