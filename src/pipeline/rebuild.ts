import { DedupeTable, type ContextRules } from '../context/index.js'
import { toolMessageKeyPaced } from '../session/fingerprints.js'
import {
  claimOwnership,
  listSession,
  ownNewest,
  type Continuity,
  type SessionRef,
} from '../session/find.js'
import { keys, parseRecord, type ToolRecord } from '../session/records.js'
import { compactionTables, recordHead, summaryKey, withTable } from '../session/tables.js'
import type { Store } from '../store/store.js'
import type { Memos } from '../memo.js'
import type { Profile } from '../tools/index.js'
import type { Workspace } from '../workspace/index.js'
import {
  contentText,
  withMarkersOf,
  withText,
  type ChatMessage,
  type ToolCall,
  type ToolDefinition,
} from '../wire/chat.js'
import type { Elision } from '../session/elision.js'
import type { CacheBreak } from './breaks.js'
import { callsOfResults } from './elide.js'
import { pacer } from '../pace/index.js'
import {
  addShown,
  stubTargets,
  editBases,
  renderFresh,
  type CallIdRecord,
  type Fresh,
  type NewResult,
  type Savings,
} from './fresh.js'

export interface HistoryDeps {
  readonly store: Store
  readonly memos: Memos
  readonly workspace?: Workspace | undefined
  readonly rules: ContextRules
  readonly profile: Profile
}

export interface HistoryStats {
  newResults: number
  stubs: number
  /** New results rendered as a stub of an earlier one (same file range, same listing). */
  dedupes: number
  /** New results whose rendering was cut to the cap. */
  caps: number
  /** Sum over new results of (tool text − rendering) in UTF-16 units, when positive. */
  charsSaved: number
  restoredExchanges: number
  /** Summaries that carry the table of files read before them. */
  compactions: number
  /** Summaries seen for the first time: the agent has just compacted. */
  newSummaries?: number
  /** Tool results shown as an elided stand-in. */
  elided?: number
  /** Calls shown with their long strings elided (`--elide-inputs`). */
  elidedInputs?: number
  /** New results of known agent tools not answered as their profile expects (agent drift). */
  unrecognised?: Unrecognised[]
  /** The request's last new results (at most RECENT_RESULTS): the dashboard's latest ones. */
  results?: NewResult[]
  /** Where the request stopped repeating the session's previous one, and who changed it. */
  cacheBreak?: CacheBreak
  /**
   * Over every tool message the request carries (not only new ones): the client's characters
   * less what went upstream. What this request did not send.
   */
  carriedChars?: number
}

/** A known tool's result that was not as expected: the tool, and what was expected of it. */
export interface Unrecognised {
  readonly tool: string
  readonly expected: string
}

/**
 * What the rebuild knows at a point of a history: enough to go on from there with only the
 * messages a later request appends (see splice.ts).
 */
export interface HistoryState {
  readonly table: DedupeTable
  readonly views: ReadonlyMap<string, { readonly sha256: string }>
  readonly lastToolKey: string | undefined
  /** The tool calls of the last assistant message: a later tool message may answer one. */
  readonly calls: ReadonlyMap<string, ToolCall>
  /** How often each tool message (call id and content) came so far: look-alikes by place. */
  readonly seen: ReadonlyMap<string, number>
  /** The session's batches of elided results, as far as they apply here. */
  readonly elision: Elision
  /** `carriedChars` of the tool messages so far. */
  readonly carried: number
  /** The agent's turns so far (its answers): about the requests the session has made. */
  readonly turns: number
  /** The last message was the agent's: an answer right after it is the same turn. */
  readonly inTurn: boolean
}

export interface Rebuilt {
  /** The view's messages, tool results rendered and summaries with their tables. */
  readonly messages: ChatMessage[]
  readonly stats: HistoryStats
  /** The state after the last message, and before `snapshotAt` when asked. */
  readonly state: HistoryState
  readonly snapshot?: HistoryState | undefined
  /** The values of the caller's `extraKeys`, read in the request's one batched read. */
  readonly extra: readonly (string | undefined)[]
  /** The tool messages sent as a stub, by key: the ids each one names. */
  readonly stubOf: ReadonlyMap<string, readonly string[]>
  /** Results under an earlier result's id with another text: never elided (see ToolRecord). */
  readonly rewritten: ReadonlySet<string>
  /** The same request with other batches of elided results (a batch decided on it). */
  reassemble(elision: Elision): Promise<Rebuilt>
}

/** Tool messages by place: the n-th look-alike (same call id, same content) has its own key. */
export async function toolKeys(
  messages: readonly ChatMessage[],
  start: HistoryState | undefined,
  snapshotAt?: number,
): Promise<ToolKeys> {
  const seen = new Map(start?.seen ?? [])
  let snapshot: Map<string, number> | undefined
  const out: (string | undefined)[] = []
  // A hash per result: paced, for requests that carry tens of thousands.
  const pace = pacer()
  for (const [index, message] of messages.entries()) {
    await pace()
    if (index === snapshotAt) snapshot = new Map(seen)
    if (message.role !== 'tool') {
      out.push(undefined)
      continue
    }
    const base = await toolMessageKeyPaced(message, pace)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.push(
      n === 0
        ? base
        : await toolMessageKeyPaced({ ...message, tool_call_id: `${n}\u0000${base}` }, pace),
    )
  }
  if (snapshotAt === messages.length) snapshot = new Map(seen)
  return { keys: out, seen, snapshot }
}

export interface ToolKeys {
  readonly keys: (string | undefined)[]
  readonly seen: Map<string, number>
  readonly snapshot?: Map<string, number> | undefined
}

export interface RebuildInput {
  readonly messages: readonly ChatMessage[]
  /** From toolKeys. */
  readonly keys: ToolKeys
  readonly definitions: readonly ToolDefinition[]
  readonly session: SessionRef
  readonly continuity: Continuity
  /** The state the messages go on from (the fast path). */
  readonly start?: HistoryState | undefined
  /** Where to take a snapshot of the state (a view index): the fast path's next start. */
  readonly snapshotAt?: number | undefined
  /** More keys of the session's scope for the request's one batched read. */
  readonly extraKeys: readonly string[]
  /** Stand-ins for elided results: such results are no stub targets. */
  readonly elision: Elision
}

/**
 * Renders the view's tool messages. Known ones come back from the store byte for byte; new ones
 * get ids and renderings, written before the request is forwarded. The dedupe table is only
 * what this request carries.
 */
export async function rebuildHistory(input: RebuildInput, deps: HistoryDeps): Promise<Rebuilt> {
  const { messages, session } = input
  const tools: Fresh[] = []
  messages.forEach((message, index) => {
    const key = input.keys.keys[index]
    if (key !== undefined) tools.push({ index, message, key })
  })
  const bases = editBases(input, tools, deps.profile)
  const extraKeys = [...input.extraKeys, ...bases.map(keys.file)]
  let records = await readRecords(session.scope, tools, extraKeys, deps.store)
  const fresh = tools.filter((slot) => !records.tools.has(slot.key))
  if (
    fresh.length > 0 &&
    (await claimOwnership(
      session,
      fresh.map((slot) => slot.key),
      deps.store,
    ))
  ) {
    // Another replica created this session first: its records are the ones to use.
    records = await readRecords(session.scope, tools, extraKeys, deps.store)
  }
  const baseValues = records.extra.splice(input.extraKeys.length)
  const stillFresh = tools.filter((slot) => !records.tools.has(slot.key))
  const savings: Savings = { dedupes: 0, caps: 0, charsSaved: 0 }
  if (stillFresh.length > 0) {
    const written = await renderFresh(
      {
        ...input,
        tools,
        fresh: stillFresh,
        known: records.tools,
        callIds: records.callIds,
        bases: new Map(bases.map((sha, i) => [sha, baseValues[i]])),
        alongside: (scope) =>
          Promise.all([
            // A summary's table is built from the head before this request: then it waits.
            input.continuity.summaries.length === 0 &&
              writeHead(scope, tools, input.continuity.now, deps),
            ownNewest(session, scope, stillFresh.at(-1)?.key, deps.store),
          ]),
      },
      deps,
      savings,
    )
    for (const [key, record] of written) records.tools.set(key, record)
  }
  const scope = session.scope
  const { tables, fresh: newSummaries } =
    scope === undefined
      ? { tables: new Map<number, string>(), fresh: 0 }
      : await compactionTables(messages, input.continuity.summaries, scope, deps.store, deps.rules)
  const counts = {
    ...savings,
    newResults: stillFresh.length,
    ...(newSummaries > 0 ? { newSummaries } : {}),
  }
  const assembled = async (elision: Elision): Promise<Rebuilt> => {
    const rebuilt = await assemble({ ...input, elision }, records.tools, tables, records.extra)
    Object.assign(rebuilt.stats, counts)
    return { ...rebuilt, reassemble: assembled }
  }
  const rebuilt = await assembled(input.elision)
  if (scope !== undefined) await rememberSession(input, tools, scope, stillFresh.length > 0, deps)
  return rebuilt
}

/** Writes the request's last tool message as the session's head, unless it already is. */
async function writeHead(
  scope: string,
  tools: readonly Fresh[],
  now: number,
  { store, memos }: HistoryDeps,
): Promise<void> {
  const last = tools.at(-1)
  if (!last || memos.heads.get(scope) === last.key) return
  await recordHead(scope, { key: last.key, at: now }, store)
  memos.heads.set(scope, last.key)
}

/**
 * Keeps what a later compaction needs: the request's last tool message (the head), the owner of
 * each summary, and, for a new implicit session, its place in the tenant's list.
 */
async function rememberSession(
  input: RebuildInput,
  tools: readonly Fresh[],
  scope: string,
  hadFresh: boolean,
  deps: HistoryDeps,
): Promise<void> {
  const { session, continuity, messages } = input
  const { store } = deps
  await writeHead(scope, tools, continuity.now, deps)
  if (session.identity.explicit) return
  if (continuity.summaries.length > 0) {
    const owners = continuity.summaries.map(
      (index) => [keys.ownerOfSummary(summaryKey(messages[index]!)), scope] as const,
    )
    await store.putIfAbsent(session.identity.tenant, owners)
  }
  if (hadFresh) await listSession(session.identity, scope, continuity.systemKey, deps)
}

interface Records {
  tools: Map<string, ToolRecord>
  callIds: Map<string, CallIdRecord>
  extra: (string | undefined)[]
}

/** One batched read of everything the request's messages may have in the store. */
async function readRecords(
  scope: string | undefined,
  tools: readonly Fresh[],
  extraKeys: readonly string[],
  store: Store,
): Promise<Records> {
  const records: Records = { tools: new Map(), callIds: new Map(), extra: [] }
  if (scope === undefined || tools.length + extraKeys.length === 0) return records
  const callIds = tools.map((slot) => slot.message.tool_call_id ?? '')
  const values = await store.get(scope, [
    ...tools.map((slot) => keys.tool(slot.key)),
    ...callIds.map(keys.callId),
    ...extraKeys,
  ])
  const pace = pacer()
  for (const [i, slot] of tools.entries()) {
    await pace()
    const record = parseRecord<ToolRecord>(values[i])
    if (record) records.tools.set(slot.key, record)
    const first = parseRecord<CallIdRecord>(values[tools.length + i])
    if (first) records.callIds.set(callIds[i]!, first)
  }
  records.extra = values.slice(tools.length * 2)
  return records
}

/** The view with every tool message as first rendered, and the state at its end. */
async function assemble(
  input: RebuildInput,
  toolRecords: ReadonlyMap<string, ToolRecord>,
  tables: ReadonlyMap<number, string>,
  extra: readonly (string | undefined)[],
): Promise<Omit<Rebuilt, 'reassemble'>> {
  const { messages, start } = input
  const stats: HistoryStats = {
    newResults: 0,
    stubs: 0,
    dedupes: 0,
    caps: 0,
    charsSaved: 0,
    restoredExchanges: 0,
    compactions: 0,
  }
  const table = start?.table.clone() ?? new DedupeTable()
  const views = new Map(start?.views ?? [])
  let lastToolKey = start?.lastToolKey
  let calls: ReadonlyMap<string, ToolCall> = start?.calls ?? new Map()
  let carried = start?.carried ?? 0
  let turns = start?.turns ?? 0
  let inTurn = start?.inTurn ?? false
  let snapshot: HistoryState | undefined
  const stateNow = (seen: ReadonlyMap<string, number>, copy: boolean): HistoryState => ({
    table: copy ? table.clone() : table,
    views: copy ? new Map(views) : views,
    lastToolKey,
    calls,
    seen,
    elision: input.elision,
    carried,
    turns,
    inTurn,
  })
  const stubOf = new Map<string, readonly string[]>()
  const rewritten = new Set<string>()
  const inputs = elidedCalls(messages, input.keys.keys, input.elision)
  const pace = pacer()
  const out: ChatMessage[] = []
  for (const [index, message] of messages.entries()) {
    await pace()
    out.push(assembled(message, index))
  }
  const state = stateNow(input.keys.seen, false)
  if (input.snapshotAt === messages.length) snapshot = state
  stats.carriedChars = carried
  return { messages: out, stats, state, snapshot, extra, stubOf, rewritten }

  function assembled(message: ChatMessage, index: number): ChatMessage {
    if (index === input.snapshotAt && input.keys.snapshot)
      snapshot = stateNow(input.keys.snapshot, true)
    // Consecutive answers (one Responses item per call) are one turn, their calls answered together.
    if (message.role === 'assistant' && !inTurn) turns++
    inTurn = message.role === 'assistant'
    if (message.tool_calls?.length)
      calls = callsById(
        message.tool_calls,
        messages[index - 1]?.role === 'assistant' ? calls : undefined,
      )
    const summaryTable = tables.get(index)
    if (summaryTable !== undefined) stats.compactions++
    const after = (rendered: ChatMessage) =>
      summaryTable === undefined ? rendered : withTable(rendered, summaryTable)
    const key = input.keys.keys[index]
    if (key === undefined) {
      const elided = inputs.get(index)
      if (!elided) return after(message)
      const shown = withInputs(message, elided)
      stats.elidedInputs = (stats.elidedInputs ?? 0) + elided.size
      carried += argumentsLength(message) - argumentsLength(shown)
      return after(shown)
    }
    lastToolKey = key
    const record = toolRecords.get(key)
    if (!record) throw new Error('a tool message was left without a rendering')
    if (record.rewrite) rewritten.add(key)
    for (const view of record.views ?? []) views.set(view.absPath, { sha256: view.sha256 })
    const sent = contentText(message.content).length
    const standIn = input.elision.texts.get(key)
    if (standIn !== undefined) {
      stats.elided = (stats.elided ?? 0) + 1
      carried += sent - standIn.length
      return after({ ...message, content: withText(message.content, standIn) })
    }
    const shown = addShown(table, record)
    if (shown.stub) {
      stats.stubs++
      stubOf.set(key, stubTargets(record.stub!))
    }
    carried += sent - contentText(shown.content).length
    return after({ ...message, content: withMarkersOf(shown.content, message.content) })
  }
}

/**
 * `--elide-inputs`: the calls whose arguments go elided (by the view index of the message that
 * carries them, then their place among its calls): those of results a batch named.
 */
function elidedCalls(
  messages: readonly ChatMessage[],
  toolKeys: readonly (string | undefined)[],
  elision: Elision,
): Map<number, Map<number, string>> {
  const out = new Map<number, Map<number, string>>()
  if (elision.inputs.size === 0) return out
  for (const [at, call] of callsOfResults(messages)) {
    const args = elision.inputs.get(toolKeys[at] ?? '')
    if (args === undefined) continue
    const calls = out.get(call.at) ?? new Map<number, string>()
    calls.set(call.index, args)
    out.set(call.at, calls)
  }
  return out
}

/** The characters of a message's calls' arguments. */
function argumentsLength(message: ChatMessage): number {
  return (message.tool_calls ?? []).reduce((sum, call) => sum + call.function.arguments.length, 0)
}

/** A message with its elided calls' arguments. */
function withInputs(message: ChatMessage, args: ReadonlyMap<number, string> | undefined) {
  if (!args || !message.tool_calls) return message
  const tool_calls = message.tool_calls.map((call, index) => {
    const elided = args.get(index)
    return elided === undefined
      ? call
      : { ...call, function: { ...call.function, arguments: elided } }
  })
  return { ...message, tool_calls }
}

function callsById(
  list: readonly ToolCall[],
  before: ReadonlyMap<string, ToolCall> | undefined,
): Map<string, ToolCall> {
  return new Map([...(before ?? []), ...list.map((call) => [call.id, call] as const)])
}
