import { randomUUID } from 'node:crypto'
import {
  DedupeTable,
  renderResult,
  renderRewritten,
  type ContextRules,
  type Rendering,
  type TableRead,
} from '../context/index.js'
import { assistantKey, messageKey, textKeyPrefix, toolMessageKey } from '../session/fingerprints.js'
import { explicitScope, implicitScope, type Identity } from '../session/identity.js'
import type { Store } from '../store/store.js'
import { classifyCall, type Profile } from '../tools/index.js'
import type { Workspace } from '../workspace/index.js'
import {
  contentText,
  withText,
  type ChatMessage,
  type ToolCall,
  type ToolDefinition,
} from '../wire/chat.js'
import { resultFacts, type FileViews } from './facts.js'
import { compactionTables, readHead, recordHead, summaryKey, withTable } from './compaction.js'
import { keys, parseRecord, type HiddenRecord, type ToolRecord } from './records.js'

export interface HistoryDeps {
  readonly store: Store
  readonly workspace?: Workspace | undefined
  readonly rules: ContextRules
  readonly profile: Profile
  readonly promptBlock: string
}

/** A request's session: its scope once known or created. */
export class SessionRef {
  constructor(
    readonly identity: Identity,
    public scope: string | undefined,
  ) {}

  /** The scope, created for a client that has not been seen before. */
  ensure(): string {
    this.scope ??= implicitScope(this.identity, randomUUID())
    return this.scope
  }
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
}

/**
 * What the rebuild knows at the end of a message list: enough to go on from there with only the
 * messages a later request appends (see splice.ts).
 */
export interface HistoryState {
  readonly table: DedupeTable
  readonly views: ReadonlyMap<string, { readonly sha256: string }>
  readonly lastToolKey: string | undefined
  /** The last message's key: what the next text reply's key is tied to (fingerprints.ts). */
  readonly lastMessage: string | undefined
  /** The tool calls of the last assistant message: a later tool message may answer one. */
  readonly calls: ReadonlyMap<string, ToolCall>
}

export interface Rebuilt {
  readonly messages: ChatMessage[]
  readonly stats: HistoryStats
  readonly state: HistoryState
}

/** How a session that compacted without an explicit id is found again. */
export interface Continuity {
  /** Where the agent's summaries stand in the request. */
  readonly summaries: readonly number[]
  /** A fingerprint of the system prompt (without any summary in it). */
  readonly systemKey: string
  /** Only sessions active this recently are candidates. */
  readonly withinMs: number
  readonly now: number
}

/**
 * Finds the session a request belongs to: its explicit id; else the session that owns any tool
 * message, hidden exchange or summary the request carries (implicit identity); else, right after
 * a compaction (a recognised summary and nothing else known), the one session of the tenant with
 * the same system prompt that was active recently, when there is exactly one; else none yet.
 */
export async function findSession(
  messages: readonly ChatMessage[],
  identity: Identity,
  store: Store,
  continuity?: Continuity,
): Promise<SessionRef> {
  if (identity.explicit) {
    return new SessionRef(identity, explicitScope({ ...identity, explicit: identity.explicit }))
  }
  const ownerKeys = messages.flatMap((message, index) => {
    if (continuity?.summaries.includes(index)) return [keys.ownerOfSummary(summaryKey(message))]
    if (message.role === 'tool') return [keys.ownerOfTool(toolMessageKey(message))]
    if (message.role === 'assistant') {
      const key = assistantKey(message, index > 0 ? messageKey(messages[index - 1]!) : undefined)
      return key.startsWith(textKeyPrefix) ? [] : [keys.ownerOfAssistant(key)]
    }
    return []
  })
  const owners = ownerKeys.length > 0 ? await store.get(identity.tenant, ownerKeys) : []
  const owner = owners.find((value) => value !== undefined)
  if (owner !== undefined || !continuity || continuity.summaries.length === 0) {
    return new SessionRef(identity, owner)
  }
  return new SessionRef(identity, await continuedSession(identity, store, continuity))
}

async function continuedSession(
  identity: Identity,
  store: Store,
  continuity: Continuity,
): Promise<string | undefined> {
  const listed =
    parseRecord<string[]>(
      await store.getLatest(identity.tenant, keys.sessionsOf(continuity.systemKey)),
    ) ?? []
  const heads = await Promise.all(listed.map((scope) => readHead(scope, store)))
  const recent = listed.filter((_, i) => {
    const head = heads[i]
    return head !== undefined && continuity.now - head.at <= continuity.withinMs
  })
  return recent.length === 1 ? recent[0] : undefined
}

/** Sessions this process has listed already: listing is once per session, not per request. */
const listedSessions = new Set<string>()

/** Lists a new implicit session under its system prompt, for finding it after a compaction. */
async function listSession(
  identity: Identity,
  scope: string,
  systemKey: string,
  store: Store,
): Promise<void> {
  const memo = scope + '\u0000' + systemKey
  if (listedSessions.has(memo)) return
  const key = keys.sessionsOf(systemKey)
  const listed = parseRecord<string[]>(await store.getLatest(identity.tenant, key)) ?? []
  if (!listed.includes(scope)) {
    await store.setLatest(identity.tenant, key, JSON.stringify([...listed, scope].slice(-16)))
  }
  if (listedSessions.size > 10_000) listedSessions.clear()
  listedSessions.add(memo)
}

interface Slot {
  readonly index: number
  readonly message: ChatMessage
  readonly key: string
}

/**
 * Builds the message list the upstream sees. Known tool messages and recall exchanges come back
 * from the store byte for byte; new tool messages get ids and renderings, written before the
 * request is forwarded. The dedupe table is only what this request carries.
 */
export async function rebuildHistory(
  messages: readonly ChatMessage[],
  definitions: readonly ToolDefinition[],
  session: SessionRef,
  deps: HistoryDeps,
  continuity: Continuity,
  start?: HistoryState,
): Promise<Rebuilt> {
  const tools: Slot[] = []
  const assistants: Slot[] = []
  messages.forEach((message, index) => {
    if (message.role === 'tool') tools.push({ index, message, key: toolMessageKey(message) })
    else if (message.role === 'assistant')
      assistants.push({
        index,
        message,
        key: assistantKey(message, previousMessageKey(messages, index, start)),
      })
  })

  let { toolRecords, hiddenRecords, callIds } = await readRecords(
    session.scope,
    tools,
    assistants,
    deps.store,
  )
  const fresh = tools.filter((slot) => !toolRecords.has(slot.key))
  if (fresh.length > 0 && (await claimOwnership(session, fresh, deps.store))) {
    // Another replica created this session first: its records are the ones to use.
    ;({ toolRecords, hiddenRecords, callIds } = await readRecords(
      session.scope,
      tools,
      assistants,
      deps.store,
    ))
  }
  const stillFresh = tools.filter((slot) => !toolRecords.has(slot.key))
  const savings: Savings = { dedupes: 0, caps: 0, charsSaved: 0 }
  const written =
    stillFresh.length > 0
      ? await renderFresh(
          messages,
          definitions,
          stillFresh,
          toolRecords,
          session,
          deps,
          start,
          callIds,
          savings,
        )
      : new Map<string, ToolRecord>()
  for (const [key, record] of written) toolRecords.set(key, record)

  const scope = session.scope
  const tables =
    scope === undefined
      ? new Map<number, string>()
      : await compactionTables(messages, continuity.summaries, scope, deps.store, deps.rules)
  const rebuilt = assemble(
    messages,
    toolRecords,
    hiddenRecords,
    tables,
    deps,
    stillFresh.length,
    start,
  )
  Object.assign(rebuilt.stats, savings)
  if (scope !== undefined)
    await rememberSession(
      messages,
      tools,
      session,
      scope,
      stillFresh.length > 0,
      continuity,
      deps.store,
    )
  return rebuilt
}

/** Heads we wrote, so an unchanged request writes nothing. Bounded: it is only a saving. */
const writtenHeads = new Map<string, string>()

/**
 * Keeps what a later compaction needs: the request's last tool message (the head), the owner of
 * each summary, and, for a new implicit session, its place in the tenant's list.
 */
async function rememberSession(
  messages: readonly ChatMessage[],
  tools: readonly Slot[],
  session: SessionRef,
  scope: string,
  hadFresh: boolean,
  continuity: Continuity,
  store: Store,
): Promise<void> {
  const last = tools.at(-1)
  if (last && writtenHeads.get(scope) !== last.key) {
    await recordHead(scope, { key: last.key, at: continuity.now }, store)
    if (writtenHeads.size > 10_000) writtenHeads.clear()
    writtenHeads.set(scope, last.key)
  }
  if (session.identity.explicit) return
  if (continuity.summaries.length > 0) {
    const owners = continuity.summaries.map(
      (index) => [keys.ownerOfSummary(summaryKey(messages[index]!)), scope] as const,
    )
    await store.putIfAbsent(session.identity.tenant, owners)
  }
  if (hadFresh) await listSession(session.identity, scope, continuity.systemKey, store)
}

/** The first result a tool call id came with: its id, and the message it was. */
interface CallIdRecord {
  readonly n: number
  readonly key: string
}

interface Records {
  toolRecords: Map<string, ToolRecord>
  hiddenRecords: Map<string, HiddenRecord>
  callIds: Map<string, CallIdRecord>
}

/** One batched read of everything the request's messages may have in the store. */
async function readRecords(
  scope: string | undefined,
  tools: readonly Slot[],
  assistants: readonly Slot[],
  store: Store,
): Promise<Records> {
  const records: Records = { toolRecords: new Map(), hiddenRecords: new Map(), callIds: new Map() }
  if (scope === undefined || tools.length + assistants.length === 0) return records
  const callIds = tools.map((slot) => slot.message.tool_call_id ?? '')
  const values = await store.get(scope, [
    ...tools.map((slot) => keys.tool(slot.key)),
    ...assistants.map((slot) => keys.hidden(slot.key)),
    ...callIds.map(keys.callId),
  ])
  tools.forEach((slot, i) => {
    const record = parseRecord<ToolRecord>(values[i])
    if (record) records.toolRecords.set(slot.key, record)
  })
  assistants.forEach((slot, i) => {
    const record = parseRecord<HiddenRecord>(values[tools.length + i])
    if (record) records.hiddenRecords.set(slot.key, record)
  })
  callIds.forEach((id, i) => {
    const record = parseRecord<CallIdRecord>(values[tools.length + assistants.length + i])
    if (record) records.callIds.set(id, record)
  })
  return records
}

/**
 * An implicit session claims the new messages in its tenant's index. When two replicas race on
 * the same first request, the index's first writer wins and the other joins its session.
 */
async function claimOwnership(
  session: SessionRef,
  fresh: readonly Slot[],
  store: Store,
): Promise<boolean> {
  if (session.identity.explicit) return false
  const scope = session.ensure()
  const winners = await store.putIfAbsent(
    session.identity.tenant,
    fresh.map((slot) => [keys.ownerOfTool(slot.key), scope] as const),
  )
  session.scope = winners[0] ?? scope
  return session.scope !== scope
}

async function renderFresh(
  messages: readonly ChatMessage[],
  tools: readonly ToolDefinition[],
  fresh: readonly Slot[],
  known: ReadonlyMap<string, ToolRecord>,
  session: SessionRef,
  deps: HistoryDeps,
  start: HistoryState | undefined,
  callIds: ReadonlyMap<string, CallIdRecord>,
  savings: Savings,
): Promise<Map<string, ToolRecord>> {
  const scope = session.ensure()
  // A tool message whose call id the session knows, with other content, where that result stood
  // (after the same tool message), is the client's own rewrite of an old result (a pruned
  // "[Old tool result content cleared]"): it keeps its id. A call id reused elsewhere is new.
  const previousKeys = toolKeysBefore(messages, start?.lastToolKey)
  const earlier = fresh.map((slot) => callIds.get(slot.message.tool_call_id ?? ''))
  const candidates = earlier.flatMap((original) => (original ? [keys.tool(original.key)] : []))
  const originals = candidates.length > 0 ? await deps.store.get(scope, candidates) : []
  const originalRead = new Map<string, TableRead | undefined>()
  let nextOriginal = 0
  fresh.forEach((slot, i) => {
    if (!earlier[i]) return
    const record = parseRecord<ToolRecord>(originals[nextOriginal++])
    if (record && record.prev === previousKeys.get(slot.index)) {
      originalRead.set(slot.key, record.stub ? undefined : record.read)
    }
  })
  const rewritten = new Set(originalRead.keys())
  const claimed = await deps.store.claimIds(
    scope,
    fresh.filter((slot) => !rewritten.has(slot.key)).map((slot) => keys.tool(slot.key)),
  )
  let nextClaimed = 0
  const numbers = fresh.map((slot, i) =>
    rewritten.has(slot.key) ? earlier[i]!.n : claimed[nextClaimed++]!,
  )
  const calls = new Map([...(start?.calls ?? []), ...toolCallsById(messages)])
  const definitions = definitionsByName(tools)
  const freshIndex = new Map(fresh.map((slot, i) => [slot.index, i]))
  let previousKey = start?.lastToolKey

  // In message order: the dedupe table and the file views are what this request carries
  // before each result. Views hold a file's content as the request last showed it.
  const table = start?.table.clone() ?? new DedupeTable()
  const views = new Map<string, { sha256: string; content?: string }>(start?.views ?? [])
  const fileViews: FileViews = {
    async content(absPath) {
      const view = views.get(absPath)
      if (!view) return undefined
      if (view.content !== undefined) return view.content
      const [stored] = await deps.store.get(scope, [keys.file(view.sha256)])
      return stored
    },
  }
  const rendered = new Map<string, ToolRecord>()
  const writes: (readonly [string, string])[] = []
  for (const [index, message] of messages.entries()) {
    if (message.role !== 'tool') continue
    const i = freshIndex.get(index)
    const prev = previousKey
    previousKey = toolMessageKey(message)
    if (i === undefined) {
      const record = known.get(previousKey)
      if (record) {
        addShown(table, record)
        for (const view of record.views ?? []) views.set(view.absPath, { sha256: view.sha256 })
      }
      continue
    }
    const slot = fresh[i]!
    const number = numbers[i]!
    const text = contentText(slot.message.content)
    const call = calls.get(slot.message.tool_call_id ?? '')
    const classified = call
      ? classifyCall(deps.profile, call.function.name, call.function.arguments, definitions)
      : ({ kind: 'other' } as const)
    const facts = rewritten.has(slot.key)
      ? undefined
      : await resultFacts(classified, text, deps.profile, deps.workspace, fileViews)
    const rendering: Rendering = facts
      ? renderResult({ number, call: facts.call, text }, table, deps.rules)
      : { text: renderRewritten(number, text, deps.rules), read: originalRead.get(slot.key) }
    const record: ToolRecord = {
      n: number,
      content: withText(slot.message.content, rendering.text),
      entry: rendering.entry,
      read: rendering.read,
      stub: rendering.stub && {
        target: rendering.stub.target,
        content: withText(slot.message.content, rendering.stub.full.text),
        entry: rendering.stub.full.entry,
        read: rendering.stub.full.read,
      },
      views: facts?.views?.map((view) => ({ absPath: view.absPath, sha256: view.sha256 })),
      prev,
    }
    for (const view of facts?.views ?? []) {
      views.set(view.absPath, { sha256: view.sha256, content: view.content })
      writes.push([keys.file(view.sha256), wellFormed(view.content)])
    }
    countSavings(savings, text, rendering, number, deps.rules, facts?.call.kind)
    rendered.set(slot.key, record)
    // A rewrite is not a new result: the full text of its id stays what it was.
    if (!rewritten.has(slot.key)) {
      writes.push([keys.result(number), wellFormed(rendering.stored ?? text)])
      writes.push([
        keys.callId(slot.message.tool_call_id ?? ''),
        JSON.stringify({ n: number, key: slot.key }),
      ])
    }
    addShown(table, record)
  }

  // One atomic batch: the renderings with the full results and file contents they stand for,
  // so no rendering is ever stored without what its recall shows. First writer wins: a
  // concurrent twin of this request reads ours back.
  const entries = [...rendered].map(
    ([key, record]) => [keys.tool(key), JSON.stringify(record)] as const,
  )
  const winners = await deps.store.putIfAbsent(scope, [...entries, ...writes])
  const out = new Map<string, ToolRecord>()
  entries.forEach(([key], i) => out.set(key.slice(2), JSON.parse(winners[i]!) as ToolRecord))
  return out
}

/** What renderings saved in one request (see HistoryStats). */
type Savings = Pick<HistoryStats, 'dedupes' | 'caps' | 'charsSaved'>

function countSavings(
  savings: Savings,
  text: string,
  rendering: Rendering,
  number: number,
  rules: ContextRules,
  kind: string | undefined,
): void {
  if (rendering.stub) savings.dedupes++
  else if (rendering.stored !== undefined) {
    if (rendering.stored !== rendering.text) savings.caps++ // an edit's diff, cut
  } else if ((kind === 'listing' || kind === 'other') && rendering.text.length > 0) {
    // Uncut, these are the text under its id: anything else was cut to the cap.
    if (rendering.text !== renderRewritten(number, text, rules)) savings.caps++
  }
  const saved = text.length - rendering.text.length
  if (saved > 0) savings.charsSaved += saved
}

/**
 * Text as the store can keep it exactly: a lone UTF-16 surrogate (an agent that cut its output
 * in the middle of an emoji) becomes U+FFFD, so such a result is stored, not refused.
 */
function wellFormed(text: string): string {
  return (text as unknown as { toWellFormed(): string }).toWellFormed()
}

/** For each tool message (by index), the key of the tool message before it in the request. */
function toolKeysBefore(
  messages: readonly ChatMessage[],
  first: string | undefined,
): Map<number, string | undefined> {
  const before = new Map<number, string | undefined>()
  let previous = first
  messages.forEach((message, index) => {
    if (message.role !== 'tool') return
    before.set(index, previous)
    previous = toolMessageKey(message)
  })
  return before
}

/** The key of the message before `index`, across the known history when going on from it. */
function previousMessageKey(
  messages: readonly ChatMessage[],
  index: number,
  start: HistoryState | undefined,
): string | undefined {
  return index > 0 ? messageKey(messages[index - 1]!) : start?.lastMessage
}

/** Adds what a rendering shows to the table; a stub whose target is gone shows in full. */
function addShown(
  table: DedupeTable,
  record: ToolRecord,
): { content: ToolRecord['content']; stub: boolean } {
  if (record.stub && table.has(record.stub.target)) return { content: record.content, stub: true }
  const entry = record.stub ? record.stub.entry : record.entry
  if (entry) table.add(entry)
  return { content: record.stub ? record.stub.content : record.content, stub: false }
}

function assemble(
  messages: readonly ChatMessage[],
  toolRecords: ReadonlyMap<string, ToolRecord>,
  hiddenRecords: ReadonlyMap<string, HiddenRecord>,
  tables: ReadonlyMap<number, string>,
  deps: HistoryDeps,
  newResults: number,
  start: HistoryState | undefined,
): Rebuilt {
  const stats: HistoryStats = {
    newResults,
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
  const out: ChatMessage[] = []
  // The block joins a system prompt that opens the history, or opens it itself: placed by the
  // first message alone, so a system message appearing later never moves it. Going on from a
  // known history, it is already there.
  for (const [index, message] of messages.entries()) {
    const summaryTable = tables.get(index)
    if (summaryTable !== undefined) stats.compactions++
    const after = (rendered: ChatMessage) =>
      summaryTable === undefined ? rendered : withTable(rendered, summaryTable)
    if (index === 0 && start === undefined && message.role === 'system') {
      out.push(after(withPromptBlock(message, deps.promptBlock)))
    } else if (message.role === 'tool') {
      lastToolKey = toolMessageKey(message)
      const record = toolRecords.get(lastToolKey)
      if (!record) throw new Error('a tool message was left without a rendering')
      for (const view of record.views ?? []) views.set(view.absPath, { sha256: view.sha256 })
      const shown = addShown(table, record)
      if (shown.stub) stats.stubs++
      out.push(after({ ...message, content: shown.content }))
    } else if (summaryTable !== undefined) {
      out.push(after(message))
    } else if (message.role === 'assistant') {
      const hidden = hiddenRecords.get(
        assistantKey(message, previousMessageKey(messages, index, start)),
      )
      if (hidden) {
        out.push(...hidden.messages)
        stats.restoredExchanges++
      } else out.push(message)
    } else out.push(message)
  }
  if (start === undefined && messages[0]?.role !== 'system') {
    out.unshift({ role: 'system', content: deps.promptBlock })
  }
  for (const message of messages) if (message.tool_calls?.length) calls = toolCallsById([message])
  const last = messages.at(-1)
  const lastMessage = last ? messageKey(last) : start?.lastMessage
  return { messages: out, stats, state: { table, views, lastToolKey, lastMessage, calls } }
}

/** The block goes once at the end of the first system message: the same bytes every time. */
function withPromptBlock(message: ChatMessage, block: string): ChatMessage {
  const content = message.content
  if (Array.isArray(content))
    return { ...message, content: [...content, { type: 'text', text: block }] }
  const text = typeof content === 'string' && content !== '' ? content + '\n\n' + block : block
  return { ...message, content: text }
}

function toolCallsById(messages: readonly ChatMessage[]): Map<string, ToolCall> {
  const calls = new Map<string, ToolCall>()
  for (const message of messages)
    for (const call of message.tool_calls ?? []) calls.set(call.id, call)
  return calls
}

function definitionsByName(tools: readonly ToolDefinition[]): Map<string, ToolDefinition> {
  const map = new Map<string, ToolDefinition>()
  for (const tool of tools) if (tool.function?.name) map.set(tool.function.name, tool)
  return map
}
