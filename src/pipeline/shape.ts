import type { Door, Json, View } from './door.js'
import {
  hiddenKeys,
  hiddenValues,
  placeAnswers,
  restoreAnswers,
  type AnswerPlace,
  type Placed,
} from '../session/answers.js'
import { findSession, SessionRef, type Continuity } from '../session/find.js'
import { shortHash, type Identity } from '../session/identity.js'
import {
  NO_ELISION,
  readElision,
  withBatch,
  writeBatch,
  type ElisionBatch,
} from '../session/elision.js'
import { keys, parseRecord } from '../session/records.js'
import { elidedExchange, recallAnswers, rewrittenCalls } from './hidden-answers.js'
import { marks, signalledSummary, summaryIndices } from '../session/summaries.js'
import { summaryKey } from '../session/tables.js'
import { pacer } from '../pace/index.js'
import type { Profile } from '../tools/index.js'
import { contentText, type ChatMessage, type ToolDefinition } from '../wire/chat.js'
import { piecesBytes } from './body.js'
import {
  batchInputs,
  dueBatch,
  liveAnswers,
  liveResults,
  partStart,
  standIn,
  type ElideSettings,
  type Live,
} from './elide.js'
import {
  rebuildHistory,
  toolKeys,
  type HistoryDeps,
  type HistoryStats,
  type Rebuilt,
} from './rebuild.js'
import type { SpliceState } from './splice.js'

export interface ShapeDeps extends HistoryDeps {
  readonly promptBlock: string
  /** `--elide`: batches of old results replaced by stand-ins; absent, nothing is elided. */
  readonly elide?: ElideSettings | undefined
}

/** One request's items on their way upstream: the whole history, or what goes on from `start`. */
export interface ShapeInput {
  readonly door: Door
  readonly request: Json
  readonly items: readonly Json[]
  readonly view: View
  readonly identity: Identity
  /** Where the items go on from (the fast path); the full path starts from nothing. */
  readonly start?: SpliceState | undefined
  /** The upstream bytes of the items `start` holds, resolved against this request's body. */
  readonly known?: readonly Buffer[] | undefined
  readonly compactionSignal?: string | undefined
  readonly now: number
  readonly withinMs: number
  /**
   * Results a fast-path attempt wrote before it left the request to the full path, which then
   * finds them stored: counted here so `/stats` counts them as new all the same.
   */
  readonly given?: { newResults: number } | undefined
}

export interface Shaped {
  readonly session: SessionRef
  /** The upstream bytes of the items (elements joined by commas, in pieces). */
  readonly items: readonly Buffer[]
  /** The upstream bytes of each of this request's client items (empty for one sent as none). */
  readonly upstream: readonly Buffer[]
  readonly stats: HistoryStats
  /** Where the model's answer to this request stands. */
  readonly place: AnswerPlace
  /** For each client item, the upstream bytes before it. */
  offsets(): number[]
  /** Where an `--elide` batch made now begins: its first result's item and upstream offset. */
  readonly batchAt?: {
    readonly item: number
    readonly raw: Json | undefined
    readonly at: number
    /** Where the newest turn begins after the batch: what is sent again ends there. */
    readonly end: number | undefined
  }
  /** The state at the request's end less the door's holdback: the fast path's next start. */
  readonly remember?: Omit<
    SpliceState,
    'arrayStart' | 'prefix' | 'explicit' | 'summaryAhead' | 'fixed' | 'kept' | 'digests'
  > & {
    /** The client items the remembered state covers. */
    readonly covered: number
    readonly summaryAhead: boolean
  }
}

/**
 * The shared core of every door: finds the session, renders new tool results (known ones as
 * first rendered), puts recall exchanges back where the client has their answers, elides a
 * batch of old results when one is due (`--elide`), and joins the items' upstream bytes after
 * the known ones. Undefined on the fast path when the full path must decide (a batch is due).
 */
export async function shapeItems(input: ShapeInput, deps: ShapeDeps): Promise<Shaped | undefined> {
  const { door, request, items, view, start } = input
  const definitions = door.definitions(request)
  const continuity = continuityOf(input, deps.profile, definitions)
  // With --elide the newest turn is left out of what is remembered, its results and the
  // agent's messages before them (their calls' strings, the recall exchange put back at the
  // answer): the next request's batch most often takes exactly them, and then goes on the
  // fast path.
  const covered = Math.min(
    Math.max(0, items.length - door.holdback(items)),
    deps.elide ? newestCallsAt(view, items.length) : items.length,
  )
  const snapshotAt = firstAt(view, covered)
  const tools = await toolKeys(view.messages, start?.history, snapshotAt)
  const base = start?.itemCount ?? 0
  const count = base + items.length
  const answers = placeAnswers(door, items, base, start?.lastDigest ?? '')
  const session = start
    ? new SessionRef(input.identity, start.scope)
    : await findSession(
        ownerKeys(view, continuity, tools.keys, answers.placed),
        input.identity,
        deps.store,
        continuity,
        { results: tools.keys, answered: answeredAfter(view, tools.keys) },
      )
  const elide = deps.elide
  let elision = start?.history.elision ?? NO_ELISION
  if (!start && elide && session.scope !== undefined)
    elision = await readElision(session.scope, deps.store, count)
  // Batches made since the remembered state, by another conversation of the session (a
  // subagent's) or another process: read with the request's records, a few numbers at once.
  const newerBatches =
    start && elide
      ? Array.from({ length: NEWER_BATCHES_A_READ }, (_, i) =>
          keys.elision(elision.batches + 1 + i),
        )
      : []
  if (start && elision.pending.some((at) => at <= count)) return undefined
  let rebuilt = await rebuildHistory(
    {
      messages: view.messages,
      keys: tools,
      definitions,
      session,
      continuity,
      start: start?.history,
      snapshotAt,
      extraKeys: [...hiddenKeys(answers.placed), ...newerBatches],
      elision,
    },
    deps,
  )
  if (input.given) input.given.newResults = rebuilt.stats.newResults
  if (start && newerBatches.length > 0) {
    const found = othersBatches(rebuilt.extra.slice(-newerBatches.length), [
      ...start.live.map((result) => result.key),
      ...tools.keys.flatMap((key) => (key === undefined ? [] : [key])),
    ])
    // One that elides this conversation's results: the full path applies it.
    if (found === undefined) return undefined
    if (found.length > 0) {
      elision = found.reduce((sum, batch) => withBatch(sum, batch, Infinity), elision)
      rebuilt = await rebuilt.reassemble(elision)
    }
  }
  const known = input.known ?? []
  let upstream = await upstreamItems(input, rebuilt, answers.placed, deps)
  // A summary the agent sends as a tool result (Cline's summarize_task) is all the model has of
  // what came before it: never elided.
  const summaryKeys = continuity.summaries.flatMap((i) => tools.keys[i] ?? [])
  // Only --elide weighs batches: without it, no result is followed.
  const liveNow = () => {
    if (!elide) return []
    const offsets = upstream.offsets()
    const kept =
      summaryKeys.length === 0 ? rebuilt.rewritten : new Set([...rebuilt.rewritten, ...summaryKeys])
    const elision = rebuilt.state.elision
    const fresh = [
      ...liveResults(
        view,
        tools.keys,
        rebuilt.messages,
        rebuilt.stubOf,
        kept,
        elision,
        base,
        offsets,
        elide,
      ),
      ...liveAnswers(upstream.answers, elision, base, offsets, elide),
    ]
    // In the order they stand upstream: a batch is the newest of them.
    return [...(start?.live ?? []), ...fresh.sort((a, b) => a.offset - b.offset)]
  }
  let live = liveNow()
  const newestTurn = elide ? newestTurnAt(view, upstream.offsets()) : undefined
  // New messages but no answer among them: where the newest turn begins is in the whole
  // history only, and the full path weighs the batch. Nothing new: nothing to weigh again.
  const weighed = view.messages.length > 0
  if (elide && start && weighed && newestTurn === undefined) return undefined
  // A request that offers no tools is an agent's summarisation (Codex's `tools: []`), as is one
  // the door knows by its end or the agent's profile by its prompt (Claude Code's, Qwen Code's):
  // a batch there would only take from the summary what the model saw whole the request before.
  const summarising =
    definitions.length === 0 ||
    door.summarising?.(items) === true ||
    askedToSummarise(view, deps.profile)
  const due =
    elide && session.scope !== undefined && weighed && !summarising
      ? dueBatch(live, newestTurn ?? upstream.total(), elide, rebuilt.state.turns)
      : undefined
  // A batch that reaches into the remembered items rewrites bytes this request did not parse:
  // the full path decides it.
  if (due && start && due.some((r) => partStart(r).item < base)) return undefined
  let batchAt: Shaped['batchAt']
  if (due && session.scope !== undefined && elide) {
    const rendered = new Map(tools.keys.map((key, i) => [key, rebuilt.messages[i]!] as const))
    const answered = new Map(upstream.answers.map((answer) => [answer.key, answer.text] as const))
    const textOf = (key: string) => answered.get(key) ?? contentText(rendered.get(key)?.content)
    const texts = Object.fromEntries(
      due.filter((r) => r.result).map((r) => [r.key, standIn(textOf(r.key), elide)]),
    )
    const inputs = batchInputs(view.messages, tools.keys, due, elide)
    const ours = {
      at: count,
      texts,
      ...(inputs.sent.size > 0 ? { inputs: Object.fromEntries(inputs.sent) } : {}),
    }
    const batch = await writeBatch(session.scope, deps.store, elision, ours, inputs.recalled)
    const won = JSON.stringify(batch) === JSON.stringify(ours)
    // Another process's batch won the race: it may reach further back; the full path applies it.
    if (start && !won) return undefined
    // Its first result (or call) is where the upstream bytes first differ from the previous
    // request's; a batch of another conversation that won the number changes none of them.
    const starts = won ? due.map(partStart) : elidedStarts(live, batch)
    rebuilt = await rebuilt.reassemble(withBatch(elision, batch, count))
    upstream = await upstreamItems(input, rebuilt, answers.placed, deps)
    live = liveNow()
    const first = starts.reduce<(typeof starts)[number] | undefined>(
      (a, b) => (a === undefined || b.offset < a.offset ? b : a),
      undefined,
    )
    if (first)
      batchAt = {
        item: first.item,
        raw: items[first.item - base],
        at: first.offset,
        end: newestTurnAt(view, upstream.offsets()),
      }
  }
  const stats = { ...rebuilt.stats, restoredExchanges: upstream.restored }
  const place = { index: count, previous: answers.last }
  const offsets = () => upstream.offsets()
  const shaped = {
    session,
    items: upstream.added.length === 0 ? known : [...known, upstream.added],
    upstream: upstream.bytes,
    stats,
    place,
    offsets,
    ...(batchAt ? { batchAt } : {}),
  }
  // A join across the remembered end would change bytes the next request splices: none then;
  // nor an empty history (chat: the prompt block would be left out).
  const crossing = covered < items.length && covered > 0 && upstream.perItem[covered]?.length === 0
  const scope = session.scope
  if (!rebuilt.snapshot || scope === undefined || crossing || (items.length === 0 && !start))
    return shaped
  const lastView = snapshotAt > 0 ? view.messages[snapshotAt - 1] : undefined
  const remember = {
    scope,
    systemKey: continuity.systemKey,
    sentBytes: piecesBytes(shaped.items),
    itemCount: base + covered,
    lastDigest: covered === 0 ? (start?.lastDigest ?? '') : door.itemDigest(items[covered - 1]!),
    history: rebuilt.snapshot,
    live: live.filter((result) => result.item < base + covered),
    covered,
    summaryAhead:
      (lastView !== undefined && isMarker(lastView, deps.profile)) ||
      continuity.summaries.some((at) => at >= snapshotAt),
  }
  return { ...shaped, remember }
}

/**
 * The upstream text of each client item: renderings written back, hidden exchanges restored
 * (joined where the API wants), the prompt block in the first (chat) on the full path.
 */
async function upstreamItems(
  input: ShapeInput,
  rebuilt: Rebuilt,
  placed: readonly Placed[],
  deps: ShapeDeps,
) {
  const { door, items, view, start } = input
  const written = door.writeBack(items, view, rebuilt.messages)
  const found = hiddenValues(placed, rebuilt.extra)
  // --elide: the recall answers of exchanges put back are old results too (hidden-answers.ts).
  const { texts: standIns, inputs } = rebuilt.state.elision
  const calls =
    inputs.size > 0 ? rewrittenCalls(view.messages, rebuilt.messages) : new Map<string, string>()
  const shown =
    deps.elide && (standIns.size > 0 || calls.size > 0)
      ? (exchange: readonly Json[]) => elidedExchange(door, exchange, standIns, calls)
      : undefined
  const restored = restoreAnswers(door, items, written, placed, found, shown)
  const answers = deps.elide ? recallAnswers(door, restored.exchanges) : []
  const perItem = restored.items
  door.dropUnfollowed?.(perItem)
  // The block goes with the first item wherever this request renders it: on the full path, and
  // on the fast path from a state that holds no item yet (a first request held back whole).
  if ((start?.itemCount ?? 0) === 0)
    perItem[0] = door.withBlockItems(perItem[0] ?? [], deps.promptBlock, input.request)
  const pace = pacer()
  const texts: string[] = []
  for (const list of perItem) {
    await pace()
    texts.push(list.map((item) => JSON.stringify(item)).join(','))
  }
  const known = input.known ?? []
  const knownBytes = piecesBytes(known)
  const encoded = await encodeItems(texts, known.length > 0)
  return {
    perItem,
    restored: restored.exchanges.length,
    /** The recall answers put back (with --elide): the live results the client never sent. */
    answers,
    /** Each client item's upstream bytes (views of `added`; empty for an item sent as none). */
    bytes: encoded.items,
    /** The bytes to append after the known items: their comma first, when there are some. */
    added: encoded.bytes,
    /** Upstream bytes of the known items and of this request's. */
    total: () => knownBytes + encoded.bytes.length,
    /** For each client item, the upstream bytes before it. */
    offsets(): number[] {
      let at = knownBytes + encoded.lead
      return encoded.items.map((item) => {
        const offset = at
        if (item.length > 0) at += item.length + 1
        return offset
      })
    },
  }
}

/**
 * Where the request's newest turn begins upstream (bytes): the item of the last assistant
 * message of `view`; undefined without one. A history without any (a first request) counts as
 * sent before, whole: the costlier reading of a break.
 */
function newestTurnAt(view: View, offsets: readonly number[]): number | undefined {
  for (let i = view.messages.length - 1; i >= 0; i--)
    if (view.messages[i]!.role === 'assistant') return offsets[view.origins[i]!]
  return undefined
}

/**
 * Item texts encoded once, into one buffer, joined by commas (and one before them when they go
 * after known items): each item's bytes are a view of it. Digesting and keeping them, and
 * sending them, then need no other copy of a history's text.
 */
async function encodeItems(texts: readonly string[], afterKnown: boolean) {
  const sizes = texts.map((text) => Buffer.byteLength(text))
  const present = sizes.filter((size) => size > 0).length
  const lead = afterKnown && present > 0 ? 1 : 0
  const total = lead + sizes.reduce((sum, size) => sum + size, 0) + Math.max(0, present - 1)
  const bytes = Buffer.allocUnsafe(total)
  const items: Buffer[] = []
  const pace = pacer()
  let at = 0
  for (const [k, text] of texts.entries()) {
    await pace()
    const size = sizes[k]!
    if (size === 0) {
      items.push(bytes.subarray(at, at))
      continue
    }
    if (at > 0 || lead) bytes[at++] = 44 /* , */
    bytes.write(text, at, size, 'utf8')
    items.push(bytes.subarray(at, at + size))
    at += size
  }
  return { bytes, items, lead }
}

/** Whether the model answered after the request's newest tool result (a fork's history). */
function answeredAfter(view: View, tools: readonly (string | undefined)[]): boolean {
  const newest = tools.findLastIndex((key) => key !== undefined)
  return newest >= 0 && view.messages.slice(newest + 1).some((m) => m.role === 'assistant')
}

/** The tenant's keys that may name the request's session: summaries, results, answers. */
function ownerKeys(
  view: View,
  continuity: Continuity,
  tools: readonly (string | undefined)[],
  placed: readonly Placed[],
): string[] {
  return [
    ...continuity.summaries.map((i) => keys.ownerOfSummary(summaryKey(view.messages[i]!))),
    ...tools.flatMap((key) => (key === undefined ? [] : [keys.ownerOfTool(key)])),
    ...placed.flatMap((p) => (p.named ? [keys.ownerOfAnswer(p.key)] : [])),
  ]
}

/**
 * The client item of the first tool result after the last assistant message (the newest turn's
 * results), or `count` when there is none.
 */
function newestResultsAt(view: View, count: number): number {
  const messages = view.messages
  let at = count
  for (let i = messages.length - 1; i >= 0 && messages[i]!.role !== 'assistant'; i--)
    if (messages[i]!.role === 'tool') at = view.origins[i]!
  return at
}

/**
 * With `--elide` the newest turn's messages are left out too (a batch of the results after
 * them elides their calls' strings, `--elide-inputs`, and the recall answers put back there):
 * the item of the first of the agent's last messages, when results follow them.
 */
function newestCallsAt(view: View, count: number): number {
  if (newestResultsAt(view, count) === count) return count
  const messages = view.messages
  let at = count
  for (
    let i = messages.findLastIndex((m) => m.role === 'assistant');
    messages[i]?.role === 'assistant';
    i--
  )
    at = view.origins[i]!
  return at
}

/** Whether the request ends with its agent's prompt for a summary. */
function askedToSummarise(view: View, profile: Profile): boolean {
  const last = view.messages.at(-1)
  if (profile.summarising.length === 0 || last?.role !== 'user') return false
  const text = contentText(last.content)
  return profile.summarising.some((pattern) => pattern.test(text))
}

/** The first view message that comes from item `item` or later. */
function firstAt(view: View, item: number): number {
  const at = view.origins.findIndex((origin) => origin >= item)
  return at < 0 ? view.messages.length : at
}

function continuityOf(
  input: ShapeInput,
  profile: Profile,
  definitions: readonly ToolDefinition[],
): Continuity {
  const { view, start } = input
  const messages = view.messages
  return {
    summaries: start
      ? []
      : summaryIndices(
          messages,
          profile.compaction,
          signalledSummary(input.compactionSignal, messages),
          new Set(definitions.map((tool) => tool.function?.name ?? '')),
        ),
    systemKey: start?.systemKey ?? systemKey(input.door.systemText(input.request, view), profile),
    withinMs: input.withinMs,
    now: input.now,
  }
}

/** The system prompt's fingerprint, cut before a summary an agent put into it (Continue). */
function systemKey(system: string, profile: Profile): string {
  let text = system
  for (const marker of profile.compaction) {
    if (marker.role !== 'system') continue
    const at = text.search(marker.pattern)
    if (at >= 0) text = text.slice(0, at)
  }
  return shortHash(text)
}

/**
 * A message an agent's compaction marker matches: such requests take the full path. (A marker
 * of the history's first message is never appended to a history already sent.)
 */
export function isMarker(message: ChatMessage, profile: Profile): boolean {
  return profile.compaction.some((marker) => !marker.first && marks(marker, message))
}

/** Batch numbers the fast path reads past its remembered state with the request's records. */
const NEWER_BATCHES_A_READ = 4

/**
 * The batches read past the remembered state when none of them elides any of `mine` (this
 * conversation's results in full: they were another conversation's, a subagent's); undefined
 * when one does, or when every number read was taken (there may be more).
 */
function othersBatches(
  values: readonly (string | undefined)[],
  mine: readonly string[],
): ElisionBatch[] | undefined {
  const batches: ElisionBatch[] = []
  for (const value of values) {
    if (value === undefined) return batches
    const batch = parseRecord<ElisionBatch>(value)
    if (!batch || mine.some((key) => key in batch.texts || (batch.inputs && key in batch.inputs)))
      return undefined
    batches.push(batch)
  }
  return undefined
}

/** Where each of `live` that `batch` elides begins upstream: its result, or its call's input. */
function elidedStarts(live: readonly Live[], batch: ElisionBatch) {
  return live.flatMap((result) => [
    ...(result.key in batch.texts ? [{ item: result.item, offset: result.offset }] : []),
    ...(result.input && batch.inputs && result.key in batch.inputs ? [result.input] : []),
  ])
}
