import type { ChatMessage } from '../wire/chat.js'
import { contentText } from '../wire/chat.js'
import type { Elision } from '../session/elision.js'

/** `--elide` and its settings: when a batch of old results is replaced by stand-ins. */
export interface ElideSettings {
  /** Old results (all but the last `keepResults`) must reach this many tokens. */
  readonly thresholdTokens: number
  /** The most recent results are never elided. */
  readonly keepResults: number
  /** How many later requests a batch is expected to pay over. */
  readonly horizon: number
  /** The share taken off a cached input token (0.9: cached tokens cost a tenth). */
  readonly cachedDiscount: number
  /** What writing the cache costs on top of an input token (Anthropic: 0.25). */
  readonly writePremium: number
  /** The stand-in: `{bracket}` is the result's first bracket, `{id}` its id. */
  readonly standIn: string
}

/** A tool result the model still sees in full, and where its item begins upstream (bytes). */
export interface Live {
  readonly key: string
  /** Its id (#0001), and for a stub the ids it names (several for a call that read several files). */
  readonly id: string
  readonly stubOf?: readonly string[] | undefined
  /** The rendering's length in UTF-16 units, and its stand-in's. */
  readonly chars: number
  readonly standInChars: number
  /** The client item that carries it, and the upstream bytes before that item. */
  readonly item: number
  readonly offset: number
}

/** A rendering's id, at the start of its bracket. */
const ID = /^\[(#[0-9a-f]+)/

/** Characters per token for the decision: an estimate, the same on every replica. */
const CHARS_PER_TOKEN = 4
/** A rendering shorter than this many of its stand-ins stays: eliding it would save too little. */
const MIN_STAND_INS = 2

/**
 * The tool results of `view` not elided, with their items' upstream offsets (`offsets[i]`:
 * the bytes before client item i).
 */
export function liveResults(
  view: { readonly messages: readonly ChatMessage[]; readonly origins: readonly number[] },
  toolKeys: readonly (string | undefined)[],
  rendered: readonly ChatMessage[],
  stubOf: ReadonlyMap<string, readonly string[]>,
  elision: Elision,
  base: number,
  offsets: readonly number[],
  settings: ElideSettings,
): Live[] {
  return toolKeys.flatMap((key, i) => {
    if (key === undefined || elision.texts.has(key)) return []
    const item = view.origins[i]!
    const text = contentText(rendered[i]!.content)
    const standInChars = standIn(text, settings).length
    const id = ID.exec(text)?.[1] ?? ''
    const at = { item: base + item, offset: offsets[item]! }
    return [{ key, id, stubOf: stubOf.get(key), chars: text.length, standInChars, ...at }]
  })
}

/**
 * The keys of a batch due now, or undefined: of the old results, the newest ones from where a
 * batch pays most (an older result whose break would cost more stays for a later batch).
 * `newestTurn` is where the request's newest turn begins upstream (bytes): the agent's last
 * message and what follows it, which the previous request did not carry. Those results are
 * never elided (the model has not seen them), and they are sent uncached with or without a
 * batch. A batch breaks the prompt cache once, where
 * its first result stands: the tokens from there to the newest turn are sent (and written to
 * the cache) again. It pays when what it takes out, over the horizon, costs more than that:
 *   saved × (1 − cachedDiscount) × horizon ≥ after × (cachedDiscount + writePremium)
 * with `saved` the tokens it takes out and `after` the tokens from its first result to the
 * newest turn, less those it takes out. The horizon is the setting's, but no longer than the
 * session so far (the agent's `turns`, about its requests): a session is expected to go on about
 * as long again, so a short one is not broken for requests it may never make.
 */
export function dueBatch(
  live: readonly Live[],
  newestTurn: number,
  settings: ElideSettings,
  turns = Infinity,
): Live[] | undefined {
  const old = batchOf(
    live,
    live
      .slice(0, Math.max(0, live.length - settings.keepResults))
      .filter((r) => r.offset < newestTurn),
  )
  if (old.length === 0) return undefined
  const oldChars = old.reduce((sum, result) => sum + result.chars, 0)
  if (oldChars / CHARS_PER_TOKEN < settings.thresholdTokens) return undefined
  const horizon = Math.min(settings.horizon, turns)
  // Each batch of the newest old results (from the j-th on), weighed: the one that pays most.
  let best: { net: number; from: number } | undefined
  let chars = 0
  let standIns = 0
  for (let j = old.length - 1; j >= 0; j--) {
    chars += old[j]!.chars
    standIns += old[j]!.standInChars
    const saved = (chars - standIns) / CHARS_PER_TOKEN
    const after = (newestTurn - old[j]!.offset) / CHARS_PER_TOKEN - saved
    const gain = saved * (1 - settings.cachedDiscount) * horizon
    const cost = Math.max(0, after) * (settings.cachedDiscount + settings.writePremium)
    if (gain >= cost && (!best || gain - cost >= best.net)) best = { net: gain - cost, from: j }
  }
  return best && old.slice(best.from)
}

/**
 * Which of the `candidates` go in a batch: each long enough to be worth its stand-in, except
 * one that a stub staying in view names (eliding it would show that stub's read in full
 * again); and a stub among them whose result goes too.
 */
function batchOf(live: readonly Live[], candidates: readonly Live[]): Live[] {
  const candidate = new Set(candidates)
  const pinned = new Set(live.flatMap((r) => (!candidate.has(r) && r.stubOf) || []))
  const going = new Set(
    candidates
      .filter((r) => r.chars >= MIN_STAND_INS * r.standInChars && !pinned.has(r.id))
      .map((r) => r.id),
  )
  return candidates.filter(
    (r) => going.has(r.id) || (r.stubOf?.some((target) => going.has(target)) ?? false),
  )
}

/** A result's stand-in: its first bracket (id, and a read's path and lines) and the notice. */
export function standIn(rendering: string, settings: ElideSettings): string {
  const bracket = /^\[[^\]\n]*\]/.exec(rendering)?.[0] ?? ''
  const id = ID.exec(bracket)?.[1] ?? ''
  return settings.standIn.replaceAll('{bracket}', bracket).replaceAll('{id}', id)
}
