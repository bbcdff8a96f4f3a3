import type { Door, Json, View } from './door.js'
import { placeAnswers, restoreAnswers, type AnswerPlace, type Placed } from '../session/answers.js'
import { findSession, SessionRef, type Continuity } from '../session/find.js'
import { shortHash, type Identity } from '../session/identity.js'
import { keys } from '../session/records.js'
import { signalledSummary, summaryIndices } from '../session/summaries.js'
import { summaryKey } from '../session/tables.js'
import type { Profile } from '../tools/index.js'
import { contentText, type ChatMessage, type ToolDefinition } from '../wire/chat.js'
import { appendItems } from './body.js'
import { rebuildHistory, toolKeys, type HistoryDeps, type HistoryStats } from './rebuild.js'
import type { SpliceState } from './splice.js'

export interface ShapeDeps extends HistoryDeps {
  readonly promptBlock: string
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
  readonly compactionSignal?: string | undefined
  readonly now: number
  readonly withinMs: number
}

export interface Shaped {
  readonly session: SessionRef
  /** The upstream bytes of the items (elements joined by commas, in pieces). */
  readonly items: readonly Buffer[]
  readonly stats: HistoryStats
  /** Where the model's answer to this request stands. */
  readonly place: AnswerPlace
  /** The state at the request's end less the door's holdback: the fast path's next start. */
  readonly remember?: Omit<SpliceState, 'arrayStart' | 'prefix' | 'explicit' | 'endsWithMarker'> & {
    /** The client items the remembered state covers. */
    readonly covered: number
    readonly endsWithMarker: boolean
  }
}

/**
 * The shared core of every door: finds the session, renders new tool results (known ones as
 * first rendered), puts recall exchanges back where the client has their answers, and joins
 * the items' upstream bytes after the known ones.
 */
export async function shapeItems(input: ShapeInput, deps: ShapeDeps): Promise<Shaped> {
  const { door, request, items, view, start } = input
  const continuity = continuityOf(input, deps.profile)
  const covered = Math.max(0, items.length - door.holdback)
  const snapshotAt = firstAt(view, covered)
  const tools = toolKeys(view.messages, start?.history, snapshotAt)
  const base = start?.itemCount ?? 0
  const answers = placeAnswers(door, items, base, start?.lastDigest ?? '')
  const session = start
    ? new SessionRef(input.identity, start.scope)
    : await findSession(
        ownerKeys(view, continuity, tools.keys, answers.placed),
        input.identity,
        deps.store,
        continuity,
      )
  const rebuilt = await rebuildHistory(
    {
      messages: view.messages,
      keys: tools,
      definitions: door.definitions(request) as ToolDefinition[],
      session,
      continuity,
      start: start?.history,
      snapshotAt,
      extraKeys: answers.placed.map((p) => keys.hidden(p.key)),
    },
    deps,
  )
  const written = door.writeBack(items, view, rebuilt.messages)
  const restored = restoreAnswers(door, items, written, answers.placed, rebuilt.extra)
  const perItem = restored.items
  // The prompt block (chat: in the first system message, or before it) counts as item 0.
  if (!start) perItem[0] = door.withBlockItems(perItem[0] ?? [], deps.promptBlock)
  const texts = perItem.map((list) => list.map((item) => JSON.stringify(item)).join(','))
  const known = start?.items ?? []
  const joined = (upTo: number) =>
    texts
      .slice(0, upTo)
      .filter((text) => text !== '')
      .join(',')
  const stats = { ...rebuilt.stats, restoredExchanges: restored.restored }
  const place = { index: base + items.length, previous: answers.last }
  const shaped = { session, items: appendItems(known, joined(texts.length)), stats, place }
  // A join across the remembered end would change bytes the next request splices: none then;
  // nor an empty history (chat: the prompt block would be left out).
  const crossing = covered < items.length && covered > 0 && perItem[covered]?.length === 0
  const scope = session.scope
  if (!rebuilt.snapshot || scope === undefined || crossing || (items.length === 0 && !start))
    return shaped
  const lastView = snapshotAt > 0 ? view.messages[snapshotAt - 1] : undefined
  const remember = {
    scope,
    systemKey: continuity.systemKey,
    items: covered === items.length ? shaped.items : appendItems(known, joined(covered)),
    itemCount: base + covered,
    lastDigest: covered === 0 ? (start?.lastDigest ?? '') : door.itemDigest(items[covered - 1]!),
    history: rebuilt.snapshot,
    covered,
    endsWithMarker: lastView !== undefined && isMarker(lastView, deps.profile),
  }
  return { ...shaped, remember }
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

/** The first view message that comes from item `item` or later. */
function firstAt(view: View, item: number): number {
  const at = view.origins.findIndex((origin) => origin >= item)
  return at < 0 ? view.messages.length : at
}

function continuityOf(input: ShapeInput, profile: Profile): Continuity {
  const { view, start } = input
  const messages = view.messages
  return {
    summaries: start
      ? []
      : summaryIndices(
          messages,
          profile.compaction,
          signalledSummary(input.compactionSignal, messages),
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

/** A message an agent's compaction marker matches: such requests take the full path. */
export function isMarker(message: ChatMessage, profile: Profile): boolean {
  return profile.compaction.some(
    (marker) => marker.role === message.role && marker.pattern.test(contentText(message.content)),
  )
}
