import type { ChatMessage, ToolCall } from '../wire/chat.js'
import { contentText } from '../wire/chat.js'
import { parseArguments } from '../tools/classify.js'
import type { Elision } from '../session/elision.js'
import { parseId } from '../context/index.js'
import type { RecallAnswer } from './hidden-answers.js'

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
  /** `--elide-inputs`: a batch also replaces the long strings of its results' calls. */
  readonly inputs?: InputElision | undefined
}

/** What replaces a call's long strings, and how recall shows them again. */
export interface InputElision {
  /** Each string of `minChars` or more becomes this; `{id}` is its result's id. */
  readonly standIn: string
  readonly minChars: number
  /** What opens a recall of that id: `{input}` is the call's arguments as the model wrote them. */
  readonly recalled: string
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
  /** With `--elide-inputs`, its call when that has long strings: what eliding them saves, and where. */
  readonly input?: { readonly saved: number; readonly item: number; readonly offset: number }
}

/** A result of a batch: its rendering replaced by its stand-in, its call's input, or both. */
export interface BatchPart extends Live {
  readonly result: boolean
}

/** A rendering's id, at the start of its bracket. */
const ID = /^\[(#[0-9a-f]+)/

/** The id a rendering's bracket opens with (a recall answer's too), if any. */
export function renderingId(text: string): string | undefined {
  return ID.exec(text)?.[1]
}

/** Characters per token for the decision: an estimate, the same on every replica. */
const CHARS_PER_TOKEN = 4
/** A rendering shorter than this many of its stand-ins stays: eliding it would save too little. */
const MIN_STAND_INS = 2

/**
 * The tool results of `view` not elided, with their items' upstream offsets (`offsets[i]`:
 * the bytes before client item i); never those `kept` names (rewrites, summaries).
 */
export function liveResults(
  view: { readonly messages: readonly ChatMessage[]; readonly origins: readonly number[] },
  toolKeys: readonly (string | undefined)[],
  rendered: readonly ChatMessage[],
  stubOf: ReadonlyMap<string, readonly string[]>,
  kept: ReadonlySet<string>,
  elision: Elision,
  base: number,
  offsets: readonly number[],
  settings: ElideSettings,
): Live[] {
  const calls = settings.inputs ? callsOfResults(view.messages) : new Map<number, CallAt>()
  return toolKeys.flatMap((key, i) => {
    if (key === undefined || kept.has(key)) return []
    if (elision.texts.has(key) || elision.inputs.has(key)) return []
    const item = view.origins[i]!
    const text = contentText(rendered[i]!.content)
    const standInChars = standIn(text, settings).length
    const id = renderingId(text) ?? ''
    const at = { item: base + item, offset: offsets[item]! }
    const live: Live = { key, id, stubOf: stubOf.get(key), chars: text.length, standInChars, ...at }
    const call = calls.get(i)
    const args = call && settings.inputs && elidedInput(call.call, id, settings.inputs)
    if (!call || !args) return [live]
    const callItem = view.origins[call.at]!
    const saved = call.call.function.arguments.length - args.length
    return [{ ...live, input: { saved, item: base + callItem, offset: offsets[callItem]! } }]
  })
}

/**
 * The proxy's recall answers put back with their exchanges, not elided yet, as live results:
 * each stands where its exchange does (the client item of the model's answer).
 */
export function liveAnswers(
  answers: readonly RecallAnswer[],
  elision: Elision,
  base: number,
  offsets: readonly number[],
  settings: ElideSettings,
): Live[] {
  return answers.flatMap(({ key, id, text, at }) =>
    elision.texts.has(key)
      ? []
      : [
          {
            key,
            id,
            chars: text.length,
            standInChars: standIn(text, settings).length,
            item: base + at,
            offset: offsets[at]!,
          },
        ],
  )
}

/** A result's call: the view message that carries it, its place among that message's calls. */
export interface CallAt {
  readonly at: number
  readonly index: number
  readonly call: ToolCall
}

/**
 * Each tool message's call (by view index): the first call of its id not answered yet, else the
 * latest of that id. Some model servers give every call the same id (`call_0`, or none), even
 * the calls of one turn: their results answer them in order.
 */
export function callsOfResults(messages: readonly ChatMessage[]): Map<number, CallAt> {
  const waiting = new Map<string, CallAt[]>()
  const last = new Map<string, CallAt>()
  const out = new Map<number, CallAt>()
  messages.forEach((message, at) => {
    message.tool_calls?.forEach((call, index) => {
      const made = { at, index, call }
      last.set(call.id, made)
      const queue = waiting.get(call.id)
      if (queue) queue.push(made)
      else waiting.set(call.id, [made])
    })
    if (message.role !== 'tool') return
    const id = message.tool_call_id ?? ''
    const call = waiting.get(id)?.shift() ?? last.get(id)
    if (call) out.set(at, call)
  })
  return out
}

/**
 * `--elide-inputs`: the arguments each elided call goes with from now on (by its result's key),
 * and what recall shows before its result (by the result's number): the call as written.
 */
export function batchInputs(
  messages: readonly ChatMessage[],
  toolKeys: readonly (string | undefined)[],
  due: readonly BatchPart[],
  elide: ElideSettings,
) {
  const sent = new Map<string, string>()
  const recalled = new Map<number, string>()
  const inputs = elide.inputs
  if (!inputs || !due.some((r) => r.input)) return { sent, recalled }
  const going = new Map(due.filter((r) => r.input).map((r) => [r.key, r] as const))
  for (const [at, { call }] of callsOfResults(messages)) {
    const part = going.get(toolKeys[at] ?? '')
    const args = part && elidedInput(call, part.id, inputs)
    const n = part && parseId(part.id)
    if (!part || args === undefined || n === undefined) continue
    sent.set(part.key, args)
    recalled.set(
      n,
      inputs.recalled.replaceAll('{input}', () => asWritten(call)),
    )
  }
  return { sent, recalled }
}

/** A call's input as the model wrote it: a freeform tool's text (Codex's patch), else its JSON. */
function asWritten(call: ToolCall): string {
  if (call.type !== 'custom') return call.function.arguments
  const input: unknown = (JSON.parse(call.function.arguments) as { input?: unknown }).input
  return typeof input === 'string' ? input : call.function.arguments
}

/** How deep in a call's arguments strings are looked for. */
const INPUT_DEPTH = 8

/**
 * A call's arguments with every string of `minChars` or more replaced by the stand-in (`{id}`
 * its result's id), as JSON; undefined when none is that long or saving would not pay (the
 * arguments are not a JSON object, or get no shorter).
 */
export function elidedInput(call: ToolCall, id: string, inputs: InputElision): string | undefined {
  const original = call.function.arguments
  if (original.length < inputs.minChars || id === '') return undefined
  const value = parseArguments(original)
  if (!value) return undefined
  const text = inputs.standIn.replaceAll('{id}', () => id)
  let changed = false
  const walk = (node: unknown, depth: number): unknown => {
    if (typeof node === 'string') {
      if (node.length < inputs.minChars) return node
      changed = true
      return text
    }
    if (depth >= INPUT_DEPTH || node === null || typeof node !== 'object') return node
    if (Array.isArray(node)) return node.map((x) => walk(x, depth + 1))
    return Object.fromEntries(Object.entries(node).map(([k, x]) => [k, walk(x, depth + 1)]))
  }
  const elided = JSON.stringify(walk(value, 0))
  return changed && elided.length < original.length ? elided : undefined
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
): BatchPart[] | undefined {
  const old = batchOf(
    live,
    live
      .slice(0, Math.max(0, live.length - settings.keepResults))
      .filter((r) => r.offset < newestTurn),
  )
  if (old.length === 0) return undefined
  const oldChars = old.reduce((sum, r) => sum + (r.result ? r.chars : 0) + (r.input?.saved ?? 0), 0)
  if (oldChars / CHARS_PER_TOKEN < settings.thresholdTokens) return undefined
  const horizon = Math.min(settings.horizon, turns)
  // Each batch of the newest old results (from the j-th on), weighed: the one that pays most.
  let best: { net: number; from: number } | undefined
  let savedChars = 0
  let first = Infinity
  for (let j = old.length - 1; j >= 0; j--) {
    const part = old[j]!
    savedChars += (part.result ? part.chars - part.standInChars : 0) + (part.input?.saved ?? 0)
    first = Math.min(first, partStart(part).offset)
    const saved = savedChars / CHARS_PER_TOKEN
    const after = (newestTurn - first) / CHARS_PER_TOKEN - saved
    const gain = saved * (1 - settings.cachedDiscount) * horizon
    const cost = Math.max(0, after) * (settings.cachedDiscount + settings.writePremium)
    if (gain >= cost && (!best || gain - cost >= best.net)) best = { net: gain - cost, from: j }
  }
  return best && old.slice(best.from)
}

/** Where eliding a part first changes the upstream bytes: its call's item, else its own. */
export function partStart(part: Live): { readonly item: number; readonly offset: number } {
  return part.input && part.input.offset < part.offset ? part.input : part
}

/**
 * Which of the `candidates` go in a batch: each long enough to be worth its stand-in, except
 * one that a stub staying in view names (eliding it would show that stub's read in full
 * again); and a stub among them whose result goes too. A call's long strings go whatever its
 * result does (no stub names a call).
 */
function batchOf(live: readonly Live[], candidates: readonly Live[]): BatchPart[] {
  const candidate = new Set(candidates)
  const pinned = new Set(live.flatMap((r) => (!candidate.has(r) && r.stubOf) || []))
  const going = new Set(
    candidates
      .filter((r) => r.chars >= MIN_STAND_INS * r.standInChars && !pinned.has(r.id))
      .map((r) => r.id),
  )
  return candidates.flatMap((r) => {
    const result = going.has(r.id) || (r.stubOf?.some((target) => going.has(target)) ?? false)
    if (!result && !r.input) return []
    const { input, ...rest } = r
    return [{ ...rest, result, ...(input ? { input } : {}) }]
  })
}

/** A result's stand-in: its first bracket (id, and a read's path and lines) and the notice. */
export function standIn(rendering: string, settings: ElideSettings): string {
  const bracket = /^\[[^\]\n]*\]/.exec(rendering)?.[0] ?? ''
  const id = renderingId(bracket) ?? ''
  return settings.standIn.replaceAll('{bracket}', () => bracket).replaceAll('{id}', id)
}
